"""The layout of an answer, for `culturekb.inference.choices`: whether it walks through the options, a column of
options' markers at its end, an option written out on a line of its own, a one-sentence answer that ends on a
bracketed option, a label glued to an identifier, and where a concluding sentence's reason begins."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from culturekb.inference import _choice_text as ct
from culturekb.inference._choice_values import (
    QUESTION_OR_END,
    _capital_names,
    _Item,
    _leading_letter,
    _Reading,
    _sentences,
    asks,
)
from culturekb.inference._lexicon import normalise_text

__all__ = ["answer_first", "before_its_reason", "before_reason", "closing_label", "cut_off", "declined", "described",
           "identifier", "introduced_line", "leading", "marker_column", "opens_walk_through", "reopened",
           "second_choice", "tentative", "walks_through", "written_out"]

_STRAY_START = re.compile(r"^[\]\)）】=|]+\s*(?=[\[\(（【])")

# how a finished answer ends: a sentence's end (also the Devanagari danda and the Arabic and Urdu question mark and
# full stop), a closing bracket, quote or emphasis, a formula's close, or a CJK character (Chinese answers often end a
# sentence without 。)
# (a closing "*" of Markdown emphasis touches the word before it: "**D**"; "= 10^-14 *" stops mid-product)
_FINISHED = re.compile(r"(?:[.!?。！？…।॥؟۔\"'”’)\]}）】」』》$>`\u3400-\u9fff\u3040-\u30ff\uac00-\ud7af]"
                       r"|(?<=\S)\*)\s*$")


def before_reason(sentence: str, item: _Item) -> str:
    """A sentence up to the reason it gives right after its last option label, that option's text or a phrase that
    declares it the answer ("... 应该是“C”因为 ...", "the answer is A. blue_crate, since ...", "(C) is correct
    because ..."; the words of the language's [reason] section); all of it where it gives none there."""
    last = max(item.patterns.strong.finditer(sentence), key=lambda m: m.start(), default=None)
    if last is None:
        return sentence
    reason = item.phrases.reason.search(sentence, last.end())
    if reason is None:
        return sentence
    between = ct.clean(item.phrases.tail.sub(" ", sentence[last.end():reason.start()], count=1))
    own = ct.clean(item.options[item.forms[normalise_text(ct.group_token(last))]])
    return sentence[:reason.start()] if len(between.replace(own, "", 1).strip()) <= 3 else sentence


def cut_off(text: str) -> bool:
    """Whether an answer stops mid-sentence, the token limit reached: it ends on a word, a number, a comma, a colon
    or an open bracket ("... Random job selection (RJS) policy:", "P(X = 0) = 0.2^5 = 0.0000000")."""
    return not _FINISHED.search(text)


def looping_unit(text: str) -> str | None:
    """The stretch an answer ends by writing over and over, three times or more ("The head loss due to friction is
    given by h_f = 0.0002 f." to the token limit; the loop at least 30 characters long, at most 600), its shortest
    form; None if it does not."""
    t = text.rstrip()
    n, least = len(t), 30
    if n < 3 * least:
        return None
    tail, lo = t[n - least:], max(0, n - 3 * 600)
    at = t.rfind(tail, lo, n - least)  # the nearest earlier copy of the final 30 characters, at least 30 before
    while at >= 0:
        period = n - least - at
        if 3 * period > n:
            break
        if t[n - 3 * period:n - period] == t[n - 2 * period:]:
            unit = t[n - period:]
            # (the shortest unit: "$$ΔH = -10 kcal$$\n\n" twice over is one unit repeated)
            return next((unit[:q] for q in range(1, period) if period % q == 0 and unit == unit[:q] * (period // q)),
                        unit)
        at = t.rfind(tail, lo, at + least - 1)
    return None


def loops_unconcluded(text: str, item: _Item, conclusions: Callable[[str, _Item], list[_Reading]]) -> bool:
    """Whether an answer ends in a loop (`looping_unit`) of reasoning that names no option by its label and draws
    no conclusion (`conclusions`, the reader's): caught in it to the token limit, the model never concluded, so
    what it named before is no answer. A short line naming one option over and over ("$$ΔH = -10 kcal$$") states
    that option."""
    unit = looping_unit(text)
    return (unit is not None and not item.patterns.strong.search(unit) and not conclusions(unit, item)
            and not (len(unit) <= 80 and len(ct.options_in(unit, item.options)) == 1))


def before_its_reason(sentence: str, named: list[int], item: _Item) -> str:
    """A sentence that names one option by its text, up to the reason given after that text ("Lily still thinks the
    onion is in the green crate because she didn't receive any new information"): a negation in the reason does
    not reject the option; all of the sentence where it names more or no reason follows."""
    if len(named) != 1:
        return sentence
    own = ct.clean_options(tuple(item.options))[named[0]]
    for m in item.phrases.reason.finditer(sentence):
        if ct.contains(ct.clean(sentence[:m.start()]), own):
            return sentence[:m.start()]
    return sentence


def walks_through(text: str, item: _Item) -> bool:
    """Whether the answer lists two or more options as its own lines or items ("(a) ... (b) ...")."""
    starts = {item.forms[normalise_text(ct.group_token(m))] for m in item.patterns.enumerated.finditer(text)}
    inline = {item.forms[normalise_text(ct.group_token(m))] for m in item.patterns.inline.finditer(text)}
    return len(starts) >= 2 or len(inline) >= 3


def opens_walk_through(text: str, item: _Item) -> bool:
    """Whether `text` (the lines after an answer header; the caller passes their first 800 characters) is the first
    option's line of a list that goes on to the second option's ("choice:\n\nA. ... \n\nB. ..."): the options
    about to be weighed one by one, not an answer."""
    labels = [item.forms[normalise_text(ct.group_token(m))] for m in item.patterns.enumerated.finditer(text)]
    return labels[:2] == [0, 1]


def marker_column(lines: list[str], item: _Item) -> list[int]:
    """The options of the lines at the end of `lines` that hold only an option's label ("[[B]]", "[[A]]，"), in
    order."""
    column: list[int] = []
    for line in reversed(lines):
        line = line.strip(" \t*_#>")
        index = _leading_letter(line, item)
        if index is None or ct.clean(ct.without_label(line)):
            break
        column.append(index)
    return column[::-1]


def closing_label(text: str, item: _Item) -> int | None:
    """The option of a one-sentence answer that ends on it in brackets, the only option it names in brackets ("The
    two sources best illustrate the aspect ... that is (D)."); None otherwise."""
    stripped = text.strip()
    m = re.search(r"[(（](?P<letter>[^\W_]{1,2})[)）]\s*[.。]?$", stripped)
    if m is None or "\n" in stripped or len(stripped) > 400 or normalise_text(m.group("letter")) not in item.forms:
        return None
    bracketed = {normalise_text(b) for b in re.findall(r"[(（]([^\W_]{1,2})[)）]", stripped)}
    if len(_sentences(stripped)) > 1 or len(bracketed & set(item.forms)) != 1:
        return None
    return item.forms[normalise_text(m.group("letter"))]


def written_out(text: str, item: _Item) -> int | None:
    """The one option whose whole text stands on a line of its own, its label before it or not ("A. box"); None
    where no option or several are."""
    cleaned = [ct.clean(option) for option in item.options]
    named: set[int] = set()
    for line in text.splitlines():
        if not line.strip():
            continue
        here = ct.clean(line)
        named.update(i for i, option in enumerate(cleaned) if here == option)
        labelled = _leading_letter(line, item)
        if labelled is not None and here.endswith(cleaned[labelled]):
            named.add(labelled)
    return named.pop() if len(named) == 1 else None


def introduced_line(text: str, item: _Item) -> tuple[int, int] | None:
    """(position, option) of the last line that is one option's label and its whole text ("I. blue_container")
    right under a line ending in a colon ("Based on the facts ..., the lettuce is actually in:"), the only line of
    the answer that starts with an option's label (not a list or walk-through of options); None where there is
    none."""
    cleaned = [ct.clean(option) for option in item.options]
    lines = [(m.start(), m.group()) for m in re.finditer(r"[^\n]*\S[^\n]*", text)]
    labelled = [(k, _leading_letter(line, item)) for k, (_, line) in enumerate(lines)]
    if sum(index is not None for _, index in labelled) != 1:
        return None  # no option's line, or a walk-through ("A. ...\n- This could be ...\nB. ...")
    k, index = next((k, index) for k, index in labelled if index is not None)
    here = ct.clean(lines[k][1])
    if k == 0 or index is None or not (here == cleaned[index] or here.endswith(" " + cleaned[index])):
        return None
    return (lines[k][0], index) if lines[k - 1][1].rstrip().rstrip(" *").endswith((":", "：")) else None


def identifier(line: str) -> bool:
    """Whether a line starts with a label glued to a word by an underscore ("[[D_test]]", "E_total = ...",
    "A_lonx"): an identifier, not an option standing alone (after an answer phrase, "答案是 {D_GR", it still
    names D)."""
    return re.match(ct.OPEN + r"[^\W_]{1,2}_[^\W_]", line.strip()) is not None


def answer_first(text: str, item: _Item) -> int | None:
    """The option of an answer that gives it first, on a line of its own, with its option's text ("d: 凝固第IX因子製剤投
    与\n\n...") or alone and then an explanation under a header ("e\n\n**解説:** ...", "B\n\nExplanation: ..."): what
    the explanation names on the way (another option it rules out, "A群", "血友病A") is no conclusion. None
    otherwise."""
    lines = [ln.strip(" \t*_#>") for ln in text.strip().splitlines()]
    lines = [ln for ln in lines if ln]
    if len(lines) < 2:
        return None
    said = item.phrases.line.match(lines[0])  # "Answer: C. green_bathtub\n\nExplanation: ...": the same, as an answer
    if said is not None and ct.explanation_header().match(lines[1]):
        lines[0] = said.group("value")
    index = _leading_letter(lines[0], item) if not item.patterns.marker.search(lines[0]) else None
    rest = ct.clean(ct.without_label(lines[0])) if index is not None else ""
    if index is None or (rest and rest != ct.clean(item.options[index])):
        return None
    if rest:  # the label and its option's very text ("d: 凝固第IX因子製剤投与"), then anything but a walk-through
        return None if walks_through(text, item) or _leading_letter(lines[1], item) is not None else index
    return index if ct.explanation_header().match(lines[1]) else None


def leading(text: str, item: _Item) -> int | None:
    """The option an answer starts with (`path="letter"`), unless it walks through the options or rejects it."""
    stripped = text.strip()
    # a stray closing bracket or "=" before the option ("]=[B].") is not part of it
    first_line = _STRAY_START.sub("", stripped.splitlines()[0]) if stripped else ""
    index = _leading_letter(first_line, item) if not identifier(first_line) else None
    if index is None:
        m = item.phrases.option_word.fullmatch(unicodedata.normalize("NFKC", stripped).strip(" *_.。:："))
        if m is not None and normalise_text(m.group("letter")) in item.forms:
            index = item.forms[normalise_text(m.group("letter"))]
    if index is not None and len(stripped.splitlines()) > 1 and walks_through(stripped, item):
        return None
    if index is not None and len(stripped) > 200 and re.match(r"[A-Z]\.\s", first_line) \
            and first_line[0] in _capital_names(tuple(item.options)):
        return None  # "I. If V has a basis ..." where the options read "I and III only": statement I, not option I
    if (index == 0 and stripped.startswith("(a) ") and len(stripped) > 200
            and not ct.clean(ct.without_label(first_line)).startswith(ct.clean(item.options[0]))):
        return None  # "(a) The root-mean-square speed ... (b) ...": part (a) of the question worked out, not option A
    if index is not None and item.phrases.negation.search(first_line):
        rest = ct.clean(ct.without_label(first_line))
        if not rest.startswith(ct.clean(item.options[index])):
            return None  # "(c) is not correct"
    return index


def described(text: str, index: int | None, item: _Item) -> bool:
    """Whether the last line of `text` is a bullet that gives option `index`'s label and then more than its option's
    text (a point of an explanation: "*   **a: 乳癌 --------- 飲酒習慣:** アルコールの..."), not the option alone."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip(" \t*_#>")]
    if index is None or not lines or not re.match(r"\s*(?:[*\-•・]|\d+[.)])\s", lines[-1]):
        return False
    rest = ct.clean(ct.without_label(lines[-1].strip(" \t*_#>-•・")))
    return bool(rest) and rest != ct.clean(item.options[index])


def reopened(text: str, at: int, item: _Item) -> bool:
    """Whether the text after the sentence at position `at` takes the question up again ("wait", "but", "另外"):
    measured on 270 DeepSeek-R1 thinkings cut off after such a word, the answer phrase before it was right 39.6% of
    the time at 25% chance, and careful readers read no answer in them (issue 21, round 6)."""
    end = QUESTION_OR_END.search(text, at)
    return end is not None and item.phrases.reopen.search(text, end.end()) is not None


def tentative(text: str, at: int, item: _Item) -> bool:
    """Whether the sentence around position `at` is a guess under way ("perhaps the answer is C", "wait"); not by a
    word of the options' own text ("the best fit is Option A: Sam possibly misunderstood ...")."""
    start = max(text.rfind(ch, 0, at) for ch in ".!?。！？\n") + 1
    words = [ct.clean(m.group()) for m in item.phrases.tentative.finditer(text[start:at + 40])]
    return any(not ct.contains(" ".join(ct.clean_options(item.options)), w) for w in words)


_CLAUSE_END = ".!?。！？\n,，;；:：、"


def second_choice(text: str, at: int, item: _Item) -> bool:
    """Whether the answer at position `at` (an answer phrase's value or a marker) is named in its clause as a second
    choice ("I think another reasonable answer is D", "另外一点可能的正确答案是[[B]]"): an alternative beside the
    answer, not the answer (the [alternative] words of each language)."""
    end = at
    while end > 0 and text[end - 1] in " \t*_:：\"“'‘(（[【「":
        end -= 1
    window = max(0, end - 40)  # the clause, at most its last 40 characters (not a scan back through the whole text)
    start = max(max(text.rfind(ch, window, end) for ch in _CLAUSE_END) + 1, window)
    alternative = item.phrases.alternative.search(text, start, end)
    if alternative is None:
        return False
    said = text[alternative.start():end].lower()  # of an answer or option ("另一项合理答案"), not "对另一人的反应"
    return any(w in said for w in _answer_or_option_words())


@cache
def _answer_or_option_words() -> tuple[str, ...]:
    """The answer words and option words of every language, two characters or more ("answer", "答案", "选项")."""
    return tuple(w for w in (*ct.long_answer_words(), *ct.words("option_words")) if len(w) >= 2)


def declined(text: str, phrase: re.Match[str], item: _Item) -> bool:
    """Whether a conclusion phrase (with its ``value`` group) names no answer: a negation in the phrase ("the answer
    is not ..."), a question ("So is the answer B?") or a second choice ("another plausible answer is B")."""
    at = phrase.start("value")
    return bool(item.phrases.negation.search(text, phrase.start(), at) or asks(text, at)
                or second_choice(text, at, item))
