"""The pieces of a multiple-choice reading below the reader (`culturekb.inference.choices`): what one answer reads
as (`ChoiceAnswer`), one place naming an option (`_Reading`), what a parse needs (`_Item`), and how an answer value
(a JSON value, an answer line, the words after a conclusion phrase) names an option, a hedge or a contradiction."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from culturekb.inference import _choice_text as ct
from culturekb.inference._lexicon import normalise_text

__all__ = ["ChoiceAnswer", "ChoicePath", "answer_said_in_noise", "joined_labels"]

ChoicePath = Literal["json", "marker", "answer-line", "conclusion", "final-letter", "letter", "option-text",
                     "invalid"]

_CONNECTORS = ct.connectors()  # "A or C", "B 或 D" (culturekb/data/choice_words.json)
# a capital label before a word is the label ("the answer is D based on ...", "答案：C Choosing ..."), except the
# capitals that open ordinary words: "A dog", "I think" are read only before one of these
_DEGREE = re.compile(r"^\s*(?:most |very )?(?:likely|probably|definitely|clearly|certainly|indeed|still|actually)"
                     r"[\s,:]+(?=[(\[{（【\"“'*]*[^\W_](?![^\W_]))", re.IGNORECASE)  # then a label alone
_AFTER_LABEL = frozenset({"because", "since", "as", "based", "given", "which", "due", "for", "from", "with", "in",
                          "by", "according"})


@dataclass(frozen=True)
class ChoiceAnswer:
    """The option read from an answer: its `letter` (None when invalid), its 0-based `index`, and how."""

    letter: str | None
    index: int | None
    path: ChoicePath
    ambiguous: tuple[str, ...] = ()
    """The letters an ambiguous (hedged or contradictory) answer named (empty otherwise)."""

    @property
    def valid(self) -> bool:
        """Whether an option was read."""
        return self.letter is not None

    @property
    def parse_path(self) -> ChoicePath:
        """How the option was read (the same as `path`)."""
        return self.path


@dataclass(frozen=True)
class _Reading:
    """One place in an answer that names an option (or a hedge between options)."""

    index: int | None
    path: ChoicePath
    at: int
    ambiguous: tuple[int, ...] = ()


@dataclass(frozen=True)
class _Item:
    """What one parse needs: the options, their number and the language's phrases."""

    options: Sequence[str]
    numbered: bool
    language: str | None

    @property
    def forms(self) -> dict[str, int]:
        return ct.letter_forms(len(self.options), self.numbered)

    @property
    def patterns(self) -> ct.Patterns:
        return ct.patterns(len(self.options), self.numbered)

    @property
    def phrases(self) -> ct.PhrasePatterns:
        return ct.phrase_patterns(self.language)


_OWN_MARKER = re.compile(r"\s*\[\[?\s*(?P<letter>[A-Za-z])\s*\]\]?(?=[ \t]*(?:[.。!！?？\n]|$))")  # "B [[B]]。"
_PRIMED = re.compile(r"['’′]+\s*[=<>+\-*/^]")


def _leading_letter(value: str, item: _Item) -> int | None:
    """The option a value starts with as a label: the label alone, or followed by punctuation, or followed by that
    option's own text. None otherwise."""
    m = re.match(ct.OPEN + r"(?P<letter>[A-Za-z]{1,2}(?![A-Za-z])|[^\W_]{1,2})(?P<rest>.*)$", value.strip(), re.DOTALL)
    if m is None:
        return None
    token, rest = normalise_text(m.group("letter")), m.group("rest")
    if token not in item.forms:
        return None
    index = item.forms[token]
    if _PRIMED.match(rest):  # "b' = RT /": a primed variable in a formula, not a label
        return None
    if not rest.strip() or re.match(r"\s*" + ct.CLOSE_PUNCT, rest):
        return index
    again = _OWN_MARKER.match(rest)
    if again is not None and normalise_text(again.group("letter")) == token:
        return index  # "答案是B [[B]]。因为……帽子": the label, then its own marker
    tail = rest.lstrip()
    if ct.NOSPACE.match(tail) and item.phrases.tail.match(tail) and not item.phrases.negation.search(tail):
        return index  # the label and a tail in a script without spaces: "A입니다", "Bです", "c です", "C是正确的"
    own = ct.clean(item.options[index])
    if rest[:1].isspace() and own and ct.clean(rest).startswith(own):
        return index
    return None


def _capital_before_word(value: str, item: _Item) -> int | None:
    """The option of a value that is a capital label and then words ("D based on the table", "C choices"): an
    answer value, where a capital standing alone before a word is the label; "A" and "I" (which also open ordinary
    words) only before a word such as "because". Not before a connector ("B and C", a hedge)."""
    m = re.match(r"[\(\[\s\"“'‘*_]*(?P<letter>[A-Z])[\)\]\"”'’*_]*\s+(?P<word>[^\W\d_]+)", value.strip())
    if m is None or item.numbered or m.group("letter").lower() not in item.forms:
        return None
    word = m.group("word").lower()
    if len(word) < 2 or word in _CONNECTORS or (m.group("letter") in "AI" and word not in _AFTER_LABEL):
        return None
    end = _SENTENCE_END.search(value)
    if re.search(r"[?？吗嗎]", value[:end.end()] if end is not None else value):
        return None  # "最可能的答案是 C 吗？不。" asks
    return item.forms[m.group("letter").lower()]


def _hedged(value: str, item: _Item) -> tuple[int, ...]:
    """The labels of a value made only of two or more labels and connectors ("A or C", "B/D", "A、C")."""
    tokens = ct.clean(value).split()
    if len(tokens) == 1 and ct.NOSPACE.search(tokens[0]) is None:
        tokens = list(tokens[0]) if all(ch in item.forms for ch in tokens[0]) and len(tokens[0]) > 1 else tokens
    # a connector that is also a label ("e", Portuguese "and"; "o") joins labels where it stands in lower case
    # between spaces ("A e C"); elsewhere it is the label ("d,e", "A, C e E")
    tokens = [t for t in tokens if t not in _CONNECTORS or t not in item.forms
              or not re.search(r"(?<=\s)" + re.escape(t) + r"(?=\s)", value)
              or re.search(r"(?<![^\W\d_])" + re.escape(t.upper()) + r"(?![^\W\d_])", value)]
    labels = [item.forms[t] for t in tokens if t in item.forms]
    if len(set(labels)) < 2 or any(t not in item.forms and t not in _CONNECTORS for t in tokens):
        return ()
    return tuple(dict.fromkeys(labels))


# a span of options given by its ends ("one of B through O", "(b) thru (e)"): several options, not the last one named
_RANGE = re.compile(r"(?:(?<![^\W_])(?:one|any) of (?:the )?(?:(?:options?|choices?|letters?) )?)?[(\[（]?"
                    r"(?<![^\W_])(?P<a>[A-Za-z])[)\]）]?\s+(?:through|thru)\s+[(\[（]?(?P<b>[A-Za-z])(?![^\W_])",
                    re.IGNORECASE)


def ranges_as_hedges(text: str, item: _Item) -> str:
    """`text` with each span of option labels ("the answer is one of B through O") written as a hedge of its two
    ends ("          B or O", the same length, so positions in it stay those of `text`): a span chooses no one
    option."""
    def hedge(m: re.Match[str]) -> str:
        a, b = item.forms.get(normalise_text(m.group("a"))), item.forms.get(normalise_text(m.group("b")))
        if a is None or b is None or b <= a:
            return m.group()
        return (m.group("a") + " or " + m.group("b")).rjust(len(m.group()))
    return _RANGE.sub(hedge, text) if "thr" in text else text


def taken_back(value: str, item: _Item) -> bool:
    """Whether the sentence right after an answer line's first sentence says no option is the answer ("Thus, the
    answer is 504. However, this is not among the choices"): the value was a result, not a choice."""
    parts = re.split(r"(?<=[.!?])\s+|(?<=[。！？])", value, maxsplit=1)
    return len(parts) > 1 and item.phrases.no_answer.search(parts[1][:200]) is not None


def _contradiction(index: int, rest: str, item: _Item) -> tuple[int, ...]:
    """A label whose own sentence names other options' text and never its own (``"C" - green_drawer``, green_drawer
    being B; "the answer is D - he thinks it is in the red container", D being the red basket)."""
    sentence = re.split(r"(?<=[.!?。！？])\s|\n", rest.strip(" \t\"”'*)]）:-–—"), maxsplit=1)[0][:200]
    named = ct.options_in(sentence, item.options)
    if named and index not in named:
        return (index, *named)
    return ()


def _joined(value: str, index: int, labels: list[tuple[re.Match[str], int]], item: _Item) -> tuple[int, ...]:
    """The two options of a value that gives its label, maybe that option's text, then a connector and a second
    option's label ("**B. (s)he feels ashamed ...** and **D. (s)he uses ...**", "(B) and (D)"); () otherwise.
    `labels`: the value's strong labels and their options."""
    first = next((m for m, i in labels if i == index), None)
    second = next(((m, i) for m, i in labels if first is not None and m.start() >= first.end() and i != index), None)
    if first is None or second is None:
        return ()
    raw = value[first.end():second[0].start()]
    if _LIST_SEPARATOR.fullmatch(raw):  # "C,D", "[[C]]，[[D]]", "B、C": two labels listed, not one chosen
        return tuple(sorted({index, second[1]}))
    between = ct.clean(raw).replace(ct.clean(item.options[index]), " ", 1).split()
    if between and all(w in _CONNECTORS for w in between):
        return tuple(sorted({index, second[1]}))
    # a longer list of capital labels ("Resposta: A, C e E."): every label between is listed too
    middle = _CAPITAL_ALONE.findall(raw)
    rest = _CAPITAL_ALONE.sub(" ", raw)
    words = ct.clean(rest).split()
    if middle and all(m.lower() in item.forms for m in middle) and all(w in _CONNECTORS for w in words) \
            and (words or re.search(r"[,，、/&;；]", rest)):
        return tuple(sorted({index, second[1], *(item.forms[m.lower()] for m in middle)}))
    return ()


def joined_labels(value: str, index: int, item: _Item) -> tuple[int, ...]:
    """`_joined` on a value's strong labels: the two options of "C,D" or "(B) and (D)" that start with `index`."""
    return _joined(value, index, _labelled(value, item), item)


def _labelled(value: str, item: _Item) -> list[tuple[re.Match[str], int]]:
    """A value's strong labels, each with its option."""
    return [(x, item.forms[normalise_text(ct.group_token(x))]) for x in item.patterns.strong.finditer(value)]


_CAPITAL_ALONE = re.compile(r"(?<![^\W\d_])[A-Z](?![^\W\d_])")
_LIST_SEPARATOR = re.compile(r"[\s\])）】\"”'*]*[,，、/&;；][\s\[(（【\"“'*]*")


_CLAUSE_END = re.compile(r"[,;:，；：。]|\.(?:\s|$)")


def _from_value(value: str, item: _Item, *, text_ok: bool = True) -> tuple[int | None, tuple[int, ...]]:
    """(index, ambiguous) of an answer value (JSON value, answer line, the words after a conclusion phrase): a
    label, "option B", else (with `text_ok`) the option's text. A degree word before it is passed over ("the answer
    is likely C", "probably (B)")."""
    value = _DEGREE.sub("", value, count=1)
    first = value.strip().split("\n", 1)[0].strip(" *_")
    tail = item.phrases.tail.search(first)  # "a, b, c, dです。": the labels before the copula
    first = first[:tail.start()] if tail and not first[tail.end():].strip(" .。") else first
    hedged = _hedged(first.rstrip(".。"), item) if re.fullmatch(r"[\w\s,、，/&]+[.。]?", first) else ()
    if hedged:  # "答え: a, b", "a,c": two options given, lower case too (not "[[B]]。 [[B]] [[A]] [[C]]")
        return None, hedged
    index = _leading_letter(value, item)
    if index is not None:
        m = re.match(ct.OPEN + r"[^\W_]{1,2}[\)\]\}）】」>*\"”']*\s*[.:：\-–—]?\s*(?P<rest>.*)$", value.strip(),
                     re.DOTALL)
        rest = m.group("rest") if m else ""
        again = _OWN_MARKER.match(rest)
        if again is not None and item.forms.get(normalise_text(again.group("letter"))) == index:
            rest = _SENTENCE_END.split(rest[again.end():], maxsplit=1)[0]  # "B [[B]]。因为……": no gloss to contradict
        conflict = _contradiction(index, rest, item) if rest else ()
        labels = _labelled(value, item)
        listed = {i for _, i in labels}
        if len(listed) >= 3 and len(ct.options_in(value, item.options)) >= 3:
            return None, tuple(sorted(listed))  # "A. green_chest, B. green_bottle, C. ...": a list, not a choice
        joined = _joined(value, index, labels, item)
        if joined:
            return None, joined
        return (None, conflict) if conflict else (index, ())
    hedge = _hedged(value, item) or _hedged(_CLAUSE_END.split(value, maxsplit=1)[0], item)
    if hedge:  # "either G or I, depending on what William thinks"
        return None, hedge
    index = _capital_before_word(value, item)
    if index is not None:
        return index, ()
    value = unicodedata.normalize("NFKC", value).strip(" *_\"“")
    m = item.phrases.option_word.match(value)
    if m is not None and normalise_text(m.group("letter")) in item.forms:
        index = item.forms[normalise_text(m.group("letter"))]
        # "option A: *blue suitcase*" where option A is another container: recorded, not guessed
        rest = re.sub(r"^[\)\]\}）】」>*\"”']*\s*[.:：\-–—]?\s*", "", value[m.end():])
        conflict = _contradiction(index, rest, item)
        return (None, conflict) if conflict else (index, ())
    if not text_ok:
        return None, ()
    chain = re.split(r"(?<=[.?])\s|\n", value.strip(), maxsplit=1)[0] if "=" in value else ""  # ("6! / 3!")
    result = None if re.search(r"[,;，；]", chain) else _RESULT.search(chain)
    if result is not None:  # "The answer is 6!/3! = 720/6 = 120.": the result after the last "="
        index, _ = ct.by_text(result.group(1), item.options, reverse=True)
        if index is not None:
            return index, ()
    return ct.by_text(value, item.options, reverse=True)


_RESULT = re.compile(r"=\s*([^=]{1,40}?)[\s$]*$")


# -- what a reading weighs: a letter before a tail phrase, a hedge of markers and what settles it ---------------------
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|[。！？]+|\n+")
LONE_LETTER = re.compile(r"(?:^|[^A-Za-z])[A-Za-z]$")
"""A lone letter just before a full stop ("B. Backpack"): that full stop ends no sentence."""

_LETTER_BEFORE = re.compile(r"(?-i:(?:^|(?<=[\s,，:：(\"“*]))(?P<letter>[A-Z])\**\s+)$")
# before a tail in a script written without spaces the letter may touch it ("A입니다", "Cが正解", "B是正确的")
_LETTER_TOUCHING = re.compile(r"(?-i:(?:^|(?<=[^A-Za-z0-9]))(?P<letter>[A-Z])\**\s*)$")


def _letter_then_tail(text: str, item: _Item) -> list[_Reading]:
    """A bare capital option right before a tail phrase: "so D is the most likely", "B is correct" (a capital
    standing alone is read only before punctuation elsewhere); not after a hedge word ("A or D is correct") or in a
    sentence that negates or asks."""
    found = []
    for m in item.phrases.tail.finditer(text):
        head = text[max(0, m.start() - 24):m.start()]
        letter = (_LETTER_TOUCHING if ct.NOSPACE.match(m.group()) else _LETTER_BEFORE).search(head)
        if letter is None:
            continue
        key = normalise_text(letter.group("letter"))
        if key not in item.forms:
            continue
        at = m.start() - len(head) + letter.start("letter")
        sentence_start = max(text.rfind(c, 0, at) for c in ".!?。！？\n") + 1
        clause_start = max(sentence_start, *(text.rfind(c, 0, at) + 1 for c in ",，;；"))
        end = _SENTENCE_END.search(text, m.end())
        sentence = text[sentence_start:end.end() if end is not None else len(text)]
        # the clause that names the letter ("..., so D is the most likely"), not the whole sentence, may not negate
        if (item.phrases.hedge.search(head[:letter.start()][-12:]) or item.phrases.negation.search(
                text[clause_start:m.end()]) or sentence.rstrip().endswith(("?", "？"))):
            continue
        found.append(_Reading(item.forms[key], "conclusion", sentence_start))
    return found


_BETWEEN_MARKERS = " \t\r\n,，、;；/|&“”\"「」『』()（）]】〕〗>.。"


def _marker_run_to_end(text: str, reading: _Reading, item: _Item) -> bool:
    """Whether a hedge is a list of markers, one per line, running on to the end of the text ("[[B]]\n[[C]]\n
    [[D]]"): then its last line is the end of the list, not a final answer. A single marker on a line after a line
    of several ("[[A]] [[B]] [[C]] [[D]]\n\n[[A]]") is a choice after listing the options, and stands."""
    tail = text[reading.at:]
    if item.patterns.marker.sub("", tail).strip(_BETWEEN_MARKERS):
        return False
    # a line of nothing but markers counts whole: "[[A]] [[B]] [[C]] [[D]]\n[[A]]" read from its [[D]] is still a
    # line of several markers before the lone one
    line_start = text.rfind("\n", 0, reading.at) + 1
    if not item.patterns.marker.sub("", text[line_start:reading.at]).strip(_BETWEEN_MARKERS):
        tail = text[line_start:]
    lines = [ln for ln in tail.splitlines() if ln.strip(_BETWEEN_MARKERS) or item.patterns.marker.search(ln)]
    return len(lines) >= 2 and len(item.patterns.marker.findall(lines[-2])) == 1


def _settled(reading: _Reading, firm: list[_Reading]) -> _Reading:
    """A hedge between markers ("[[A]] [[D]]") that an answer right beside it settles on one of its options ("我的
    回答是 A. [[A]] [[D]]", "[[A]] [[D]] # 最终的最可能的答案序号是 [[D]]"): that answer; any other reading as it is."""
    if reading.index is not None or not reading.ambiguous:
        return reading
    near = [r for r in firm if r.index in reading.ambiguous and -80 <= r.at - reading.at <= 200 and r is not reading]
    picked = {r.index for r in near}
    return max(near, key=lambda r: r.at) if len(picked) == 1 else reading


# -- the sentences of an answer and the labels they name ------------------------------------------------------------
def _sentences(text: str) -> list[tuple[int, str]]:
    """(start, sentence) pieces; a full stop right after a lone capital ("B. Backpack") does not end one."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group().startswith(".") and LONE_LETTER.search(text, max(0, m.start() - 2), m.start()):
            continue
        out.append((start, text[start:m.end()]))
        start = m.end()
    if start < len(text):
        out.append((start, text[start:]))
    return [(s, t) for s, t in out if t.strip()]


def _strong_labels(sentence: str, item: _Item) -> list[int]:
    """The options a sentence names unmistakably (bracketed, bold, after an option word, a capital alone); a capital
    alone that the options themselves use as a name ("70.78°C for A and 75.56°C for B") is no label."""
    names = _capital_names(tuple(item.options))
    return list(dict.fromkeys(item.forms[normalise_text(ct.group_token(m))]
                              for m in item.patterns.strong.finditer(sentence)
                              if not (m.group(ct.CAPITAL_GROUP) and m.group(ct.CAPITAL_GROUP) in names)))


@lru_cache(maxsize=1024)
def _capital_names(options: tuple[str, ...]) -> frozenset[str]:
    """The capitals that stand alone inside the options' own text ("for A and ... for B", "point P")."""
    return frozenset(m.group() for o in options for m in re.finditer(r"(?<![A-Za-z0-9])[A-Z](?![A-Za-z0-9'])", o))


def _without_option_text(sentence: str, labels: list[int], item: _Item) -> str:
    """The sentence with the text of the one option it names cut out (unchanged otherwise)."""
    if len(labels) != 1:
        return sentence
    own = unicodedata.normalize("NFKC", item.options[labels[0]]).strip().rstrip("。.")
    if len(own) < 8:
        return sentence
    at = sentence.lower().find(own.lower())
    if at >= 0:
        return sentence[:at] + sentence[at + len(own):]
    label = max((m for m in item.patterns.strong.finditer(sentence)
                 if item.forms[normalise_text(ct.group_token(m))] == labels[0]), key=lambda m: m.end(), default=None)
    if label is None or not _said_again(rest := sentence[label.end():], own):
        return sentence
    # "C. Wang Xiao doesn't want ..." for "Wang Xiao does not want ...": a negation the option's words hold too is
    # the option's own; another ("B: ... deleting the file ..., which is not supported") still rejects it
    theirs = {_negation_key(m.group()) for m in item.phrases.negation.finditer(own)}
    return sentence[:label.end()] + item.phrases.negation.sub(
        lambda m: " " if _negation_key(m.group()) in theirs else m.group(), rest)


def _negation_key(word: str) -> str:
    word = word.lower().replace("’", "'")
    return "not" if word == "n't" else word


def _said_again(rest: str, own: str) -> bool:
    """Whether the words after a label say the option again in other words (at least half of the option's own
    words of three letters or more: "she possibly doesn't want her brother to be scolded" for "Xiao Hua possibly
    does not want her brother to be scolded by their mother, ..."); spaced scripts only."""
    words = set(_WORDS.findall(own.lower()))
    return len(words) >= 4 and len(words & set(_WORDS.findall(rest.lower()))) >= len(words) / 2


_WORDS = re.compile(r"[^\W\d_]{3,}")


def _strong_at_start(value: str, item: _Item) -> bool:
    m = item.patterns.strong.search(value)
    return m is not None and not value[:m.start()].strip(" \t*_\"“'‘:：")


def _is_enumeration_item(sentence: str, item: _Item) -> bool:
    """A sentence that starts with a label and goes on about it ("(b) This is the best option because ...")."""
    return item.patterns.enumerated.match(sentence.lstrip("\n")) is not None and len(sentence.strip()) > 12


def _disowned(sentence: str, item: _Item) -> bool:
    """Whether the sentence after a conclusion phrase takes the option back: a negation followed closely by a
    conclusion word ("the closest answer is (E) 266 ohms, but this is not correct", "... but it is not the right
    answer"); "(D), as she does not know where it is" keeps it. A sentence that says no option is the answer ("the
    answer is therefore none of the given options A through O") names none."""
    if item.phrases.no_answer.search(sentence):
        return True
    label = item.patterns.strong.search(sentence[:40])
    # "选择C并不是根据 context": the option named to be set aside (not "C, not B"; not "D. 不知道", D's own words)
    if label is not None:
        own = ct.clean(item.options[item.forms[normalise_text(ct.group_token(label))]])
        after = re.split(r"[,，;；:：、]", sentence[label.end():label.end() + 8], maxsplit=1)[0]  # (not "C，不……")
        negated = item.phrases.negation.search(after)
        if (negated is not None and not ct.clean(sentence[label.end():]).startswith(own[:4] or "\0")
                and not item.patterns.strong.search(sentence, label.end() + negated.end(),
                                                    label.end() + negated.end() + 8)):
            return True
    for m in item.phrases.negation.finditer(sentence):
        if item.phrases.cue.search(sentence[m.end():m.end() + 30]):
            return True
    return False


# the answer word 答案, then (past punctuation and the joining words "是", "为", "选项", "只能", ...) a capital label
# standing alone; in noise the label is often glued to the garbage after it ("可推测答案:D.callrefena", "所以答案选项
# C浅", "最可能的答案选项是 D-analysis"), which the answer-line patterns, rightly for clean text, do not read
_NOISY_ANSWER = re.compile(r"答案[ \t:：,，.。是为選选项項择擇只能的“”\"'「」\[\]（(]{0,8}"
                           r"(?<![A-Za-z0-9])(?P<letter>[A-Z])(?![A-Za-z0-9])")


_NOT = re.compile(r"[不非没沒]")
_EXAMINE = re.compile(r"(?:分析|考虑|考慮|查看|检查|檢查|比较|比較|评估|評估|看看|逐一)\s*"
                      r"(?:各个|各個|每个|每個|所有)?\s*$")  # words of weighing the options before 答案


def answer_said_in_noise(noise: str, item: _Item) -> _Reading | None:
    """The option that answer phrases inside noise name ("...rences:\n\n可推测答案:D.callrefena되어..."): the first
    such phrase, when all of them name one option and no other option's label follows right after it ("找到标准答案
    [[A.]], B.]" lists); None otherwise. Careful readers read such an answer where they read none in a marker or a
    letter floating in the noise (hand-read rounds 8-22: 9 answers read as they read them, none against)."""
    found: list[_Reading] = []
    for m in _NOISY_ANSWER.finditer(noise):
        key = normalise_text(m.group("letter"))
        if key not in item.forms or _NOT.search(noise, max(0, m.start() - 6), m.start()):
            continue  # (not "最不被考虑的答案是:A", the answer least considered)
        if _EXAMINE.search(noise[max(0, m.start() - 6):m.start()]):
            continue  # "分析答案选项,Bुलनelim": the options about to be weighed, no answer
        index = item.forms[key]
        if any(item.forms.get(normalise_text(ct.group_token(o))) not in (None, index)
               for o in item.patterns.strong.finditer(noise, m.end(), m.end() + 8)):
            continue
        found.append(_Reading(index, "answer-line", m.start()))
    return found[0] if len({r.index for r in found}) == 1 else None


QUESTION_OR_END = re.compile(r"[?？!！。\n]|\.(?=\s|$)")


def asks(text: str, at: int) -> bool:
    """Whether the sentence going on at `at` is a question ("So the answer would be A. Boxes? Or B. A vest?"): its
    first end is a question mark (a full stop right after a lone capital, "A. Boxes", does not end it)."""
    for m in QUESTION_OR_END.finditer(text, at, min(len(text), at + 300)):
        if m.group() == "." and re.search(r"(?:^|[^A-Za-z])[A-Za-z]$", text[max(0, m.start() - 2):m.start()]):
            continue
        return m.group() in "?？"
    return False
