"""The words and written forms that `culturekb.inference.choices` reads a multiple-choice answer with.

Data, not code: answer words, option words and "the answer is" phrases per language come from
``culturekb/data/choice_words.json``; conclusion phrases (``answer_lead``, ``answer_tail``, ``conclusion_cues``,
``hedges``, ``negations``; optional ``tentative``) from ``culturekb/data/languages/choices/<code>.txt`` (see the
NOTICE beside them).
Everything here is compiled once per (number of options, numbered) or per language and cached.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.inference._lexicon import normalise_text
from culturekb.kb.vocab import load_vocabulary, vocabulary_languages
from culturekb.text.languages import word_list_sections

CHOICE_LANGUAGES = ("ar", "de", "en", "es", "fr", "hi", "ja", "ko", "pt", "ru", "sw", "th", "zh")
"""Languages with conclusion phrases in culturekb/data/languages/choices/."""

OPEN = r"[\(\[\{（【「〔〖〘《『⟨«<*_\s\"“'‘]*"
CLOSE_PUNCT = r"[\)\]\}）】」〕〗〙》』⟩»>.:：、．,，;；!！?？。\-–—*_\"”']"
# bracket pairs an option label may stand in besides ( ) [ ] { } < >: 【C】 「C」 〔C〕 〖C〗 〘C〙 《C》 『C』 ⟨C⟩ «C»
_OPEN_BRACKETS = "(\\[{（【「〔〖〘《『⟨«<"
_CLOSE_BRACKETS = ")\\]}）】」〕〗〙》』⟩»>"
NOSPACE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0eff]")
_SPACES = re.compile(r"\s+")
_DECIMAL = re.compile(r"(?<=\d)[.,](?=\d)")
# a letter token must not touch another letter or digit of its script (CJK around it is fine: "选项C是")
_BEFORE = r"(?<![A-Za-z0-9\u0600-\u06ff\u0900-\u097f])"
# scripts that a label may touch ("选项C是", "Cです", "B이며", "A ซึ่ง"); in Thai only a letter that can open a word
# (a consonant or a leading vowel, not a combining mark: "Cุดท" is noise)
_GLUED_SCRIPTS = r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af\u0e01-\u0e2e\u0e40-\u0e44]"
_AFTER = r"(?![A-Za-z0-9\u0600-\u06ff\u0900-\u097f]|['’][A-Za-z])"


def option_letters(n: int) -> tuple[str, ...]:
    """The letters of `n` options: A, B, C ... (2 to 26 options)."""
    if not 2 <= n <= 26:
        raise ConfigError(f"a multiple-choice item needs 2 to 26 options, got {n}")
    return tuple(string.ascii_uppercase[:n])


@cache
def choice_words() -> dict[str, Any]:
    """culturekb/data/choice_words.json: answer words, option words, "the answer is" phrases, connectors, script
    letters."""
    raw = json.loads(resources.files("culturekb.data").joinpath("choice_words.json").read_text("utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("answer_words"), dict):
        raise ConfigError("culturekb/data/choice_words.json: expected an object with 'answer_words', 'option_words', "
                          "'answer_is', 'connectors' and 'letters'; reinstall the package")
    return raw


def words(section: str) -> list[str]:
    """Every language's entries of one section of choice_words.json, as written (NFKC, lower case) and in
    `normalise_text` form (Arabic letter variants unified ...)."""
    return sorted({f for ws in choice_words()[section].values() for w in ws for f in _both(w)})


@cache
def connectors() -> frozenset[str]:
    """Words that join option labels in a list or a hedge ("A or C", "B 或 D", "A와 B"), every language's, as written
    (choice_words.json, section ``connectors``)."""
    return frozenset(w for ws in choice_words()["connectors"].values() for w in ws)


def _both(word: str) -> tuple[str, str]:
    return unicodedata.normalize("NFKC", word).lower(), normalise_text(word)


@dataclass(frozen=True)
class ConclusionWords:
    """The conclusion phrases of one language (or of all, merged)."""

    answer_lead: tuple[str, ...]
    answer_tail: tuple[str, ...]
    conclusion_cues: tuple[str, ...]
    hedges: tuple[str, ...]
    negations: tuple[str, ...]
    tentative: tuple[str, ...] = ()
    """Words that make an answer phrase a guess under way ("perhaps the answer is C"): inside unfinished
    thinking such a phrase is not an answer (optional section)."""
    reopen: tuple[str, ...] = ()
    """Words that take a question up again after an answer phrase ("... the answer is C.\n\nWait, maybe"): a
    thinking cut off after one never settled on that answer (optional section)."""
    no_answer: tuple[str, ...] = ()
    """Phrases that declare no option the answer ("the answer cannot be determined"): a long answer ending on one
    is not read from the option words of the sentences before (optional section)."""
    new_question: tuple[str, ...] = ()
    """Bracketed headers that pose a question ("[Story]", "[问题]"): turns after a role token that hold one are about
    another question (optional section)."""
    next_question: tuple[str, ...] = ()
    """Phrases that move on to another question ("next question", "下一题"), wherever they stand (optional
    section)."""
    what_if: tuple[str, ...] = ()
    """Words of a hypothetical ("what if", "如果"): a turn the model writes for the user that asks one poses another
    question (optional section)."""
    farewell: tuple[str, ...] = ()
    """Closing words ("goodbye", "再见", "不客气"): a conversation the model writes on with itself ends at one
    (optional section)."""
    conditional: tuple[str, ...] = ()
    """Words of a condition ("if", "如果", "otherwise"): a marker in a sentence that holds one before it ("如果没有足够
    信息，选择[[D]]是随机选择的") is no answer where the text gives an unconditional one (optional section)."""
    reason: tuple[str, ...] = ()
    """Words that open the reason given right after the chosen option ("because", "因为"): a negation inside that
    reason ("... is C because he did not see it") does not reject the option (optional section)."""
    alternative: tuple[str, ...] = ()
    """Words that make an answer phrase or marker a second choice in its clause ("another possible answer is B",
    "另一项合理答案是 D"): it names an alternative, not the answer (optional section)."""


_SECTIONS = ("answer_lead", "answer_tail", "conclusion_cues", "hedges", "negations")
_OPTIONAL_SECTIONS = ("tentative", "reopen", "no_answer", "new_question", "next_question", "what_if", "farewell",
                      "conditional", "reason", "alternative")


@cache
def conclusion_words(language: str | None = None) -> ConclusionWords:
    """The conclusion phrases of `language` plus English, or of every language when None."""
    if language is None:
        codes: Sequence[str] = CHOICE_LANGUAGES
    else:
        code = language.split("-")[0].split("_")[0].lower()
        if code not in CHOICE_LANGUAGES:
            raise ConfigError(f"no multiple-choice conclusion phrases for language {language!r}; known: "
                              f"{list(CHOICE_LANGUAGES)} (culturekb/data/languages/choices/<code>.txt); pass "
                              "language=None to read every language's phrases")
        codes = sorted({"en", code})
    merged: dict[str, set[str]] = {s: set() for s in _SECTIONS + _OPTIONAL_SECTIONS}
    for code in codes:
        sections = word_list_sections(f"languages/choices/{code}.txt")
        missing = [s for s in _SECTIONS if s not in sections]
        if missing:
            raise DataError(f"culturekb/data/languages/choices/{code}.txt lacks the sections {missing}")
        for s in _SECTIONS + _OPTIONAL_SECTIONS:
            merged[s].update(f for w in sections.get(s, ()) for f in _both(w))
    return ConclusionWords(**{s: tuple(sorted(merged[s], key=len, reverse=True))
                              for s in _SECTIONS + _OPTIONAL_SECTIONS})


_CLITIC = re.compile(r"\w['’]")


def phrase_alternation(phrases: Sequence[str]) -> str:
    """A regex alternation of phrases; a phrase in a spaced script must stand as whole words. Written as a trie (one
    branch per first character, then per next ...): hundreds of phrases tried one after the other at every position
    of a long answer cost tens of milliseconds; the trie matches the same spans in a fraction of that."""
    groups: dict[tuple[bool, bool], list[str]] = {}
    for p in {p for p in phrases if p}:
        # a clitic ("n't") ends the word it is written onto ("doesn't"): no word boundary before it
        key = (False, False) if NOSPACE.search(p) else (p[0].isalnum() and not _CLITIC.match(p), p[-1].isalnum())
        groups.setdefault(key, []).append(p)
    parts = [(r"(?<!\w)" if left else "") + _trie(words) + (r"(?!\w)" if right else "")
             for (left, right), words in sorted(groups.items())]
    return "|".join(parts) or r"(?!x)x"


def _trie(phrases: Sequence[str]) -> str:
    """One regex group matching any of `phrases`, longer continuations tried first (a space matches any run of
    white space)."""
    root: dict[str, Any] = {}
    for phrase in phrases:
        node = root
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [(r"\s+" if ch == " " else re.escape(ch)) + emit(node[ch]) for ch in sorted(c for c in node if c)]
        if "" in node:
            branches.append("")  # the phrase may end here (after every longer one was tried)
        if branches == [""]:
            return ""
        return "(?:" + "|".join(branches) + ")"

    return emit(root)


@cache
def letter_forms(n: int, numbered: bool = False) -> dict[str, int]:
    """Every written form of the n option labels -> index: a..z (normalised case), the script letters, and the
    numbers 1..n when the options are numbered."""
    forms = {letter.lower(): i for i, letter in enumerate(option_letters(n))}
    for letters in choice_words()["letters"].values():
        for i, form in enumerate(letters[:n]):
            forms[normalise_text(form)] = i
    if numbered:
        forms.update({str(i + 1): i for i in range(n)})
    return forms


@cache
def token_pattern(n: int, numbered: bool = False) -> str:
    """A regex group `t` for one option label among n, standing alone (no letter or digit touching it)."""
    forms = letter_forms(n, numbered)
    alternation = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return _BEFORE + r"(?P<t>" + alternation + r")" + _AFTER


@dataclass(frozen=True)
class Patterns:
    """Compiled patterns for n options (case-insensitive, on NFKC text)."""

    strong: re.Pattern[str]
    """A label that can only mean an option: bracketed, bold, after an option word, or a capital alone."""
    marker: re.Pattern[str]
    """An explicit answer marker: [[B]] (also quoted, [['B']], or broken over a line, "[\\n[A]]"), \\boxed{B},
    <answer>B</answer>, [答案B], 【B】, 〔B〕, 〖B〗."""
    enumerated: re.Pattern[str]
    """A line that starts with a label, as in a walk-through of the options."""
    bare: re.Pattern[str]
    """A sentence that is only "为C。" / "选D。" (Chinese "(it) is C", "choose D"): an answer line without an answer
    word."""
    inline: re.Pattern[str]
    """A label in round brackets inside a line ("... (b) ..."), as in a walk-through written on one line."""


@cache
def patterns(n: int, numbered: bool = False) -> Patterns:
    tok = token_pattern(n, numbered)
    option = phrase_alternation(words("option_words"))
    answer = phrase_alternation(answer_words())
    # not a part label glued to a number or word ("1(a)", "2(b)" of a multi-part question, "f(x)")
    bracketed = r"(?<![0-9A-Za-z])[" + _OPEN_BRACKETS + r"]\s*\**" + tok + r"\**\s*[" + _CLOSE_BRACKETS + r"]"
    bold = r"\*\*" + tok + r"[.)]?\*\*"
    after_word = r"(?:" + option + r")\s*(?:[:：]|is|是|为)?\s*[\(\[（【\"“]?\s*" + tok
    # a capital standing alone: followed by punctuation, the end, a CJK, kana, hangul or Thai character, or a dash;
    # not the letter of a closing tag ("</B.")
    capitals = [f for f in letter_forms(n, numbered) if not ("a" <= f <= "z")] + list(option_letters(n))
    capital = (r"(?-i:" + _BEFORE + r"(?<!</)(?P<t>"
               + "|".join(re.escape(f) for f in sorted(capitals, key=len, reverse=True)) + r")" + _AFTER + r")"
               + r"(?=\s*(?:$|[.)\]:：,，;；!?。、\"”]|\s[-–—]|" + _GLUED_SCRIPTS + r"))")
    strong = "|".join(f"(?:{p})" for p in (bracketed, bold, after_word, capital))  # capital: CAPITAL_GROUP
    strong = _number_groups(strong)
    marker = (r"\[[ \n]?\[\s*['\"]?\s*" + tok + r"\s*['\"]?\s*\][ \n]?\]|\\boxed\{\s*(?:\\text\{)?\s*" + tok
              + r"|<answer>\s*[\(\[]?\s*" + tok
              + r"|[\[【]\s*(?:" + answer + r")\s*[:：]?\s*[\(\[]?" + tok + r"[\)\]]?\s*[\]】]"
              + r"|【\s*" + tok + r"\s*】|〔\s*" + tok + r"\s*〕|〖\s*" + tok + r"\s*〗")
    enumerated = r"^[ \t]*(?:[-*•>#]+\s*)?(?:\*\*)?[\(\[（]?\s*" + tok + r"\s*[\)\]）.:：、](?!\d)"
    bare = (r"(?:^|(?<=[。！？.!?\n]))[ \t]*(?:为|為|选|選)[ \t]*[:：]?[ \t]*[\(（\[【]?[ \t]*" + tok
            + r"[ \t]*[\)）\]】]?[ \t]*(?=[。.!！\n]|$)")
    inline = r"(?:^|[\s:：;；,，])[\(（]\s*" + tok + r"\s*[\)）]\s*\S"
    return Patterns(re.compile(strong, re.IGNORECASE | re.MULTILINE),
                    re.compile(_number_groups(marker), re.IGNORECASE),
                    re.compile(enumerated, re.IGNORECASE | re.MULTILINE),
                    re.compile(bare, re.IGNORECASE | re.MULTILINE),
                    re.compile(inline, re.IGNORECASE))


CAPITAL_GROUP = "t3"
"""The group of `Patterns.strong` that a capital standing alone fills (its fourth alternative, numbered by
`_number_groups`)."""


def _number_groups(regex: str) -> str:
    """Rename the repeated group `t` to t0, t1 ... so that one regex holds several alternatives."""
    count = iter(range(1000))
    return re.sub(r"\(\?P<t>", lambda _: f"(?P<t{next(count)}>", regex)


def group_token(match: re.Match[str]) -> str:
    """The label a match of `strong` or `marker` found (whichever alternative matched)."""
    for name, value in match.groupdict().items():
        if name.startswith("t") and value is not None:
            return value
    raise ValueError("no label group matched")


@cache
def answer_words() -> tuple[str, ...]:
    """Words that start an answer line, every language (choice_words.json and the vocabularies' answer keys)."""
    found = set(words("answer_words"))
    for lang in vocabulary_languages():
        found.update(f for k in load_vocabulary(lang).answer_keys for f in _both(k))
    return tuple(sorted(found, key=len, reverse=True))


@cache
def explanation_header() -> re.Pattern[str]:
    """A line that heads an explanation ("Explanation:", "**解説:**"), every language (vocabularies' explanation
    keys)."""
    found = {f for lang in vocabulary_languages() for k in load_vocabulary(lang).explanation_keys for f in _both(k)}
    alternation = "|".join(re.escape(w) for w in sorted(found, key=len, reverse=True))
    return re.compile(r"(?:" + alternation + r")\s*[*_]*\s*[:：]", re.IGNORECASE)


@cache
def long_answer_words() -> tuple[str, ...]:
    """`answer_words` of two or more characters (a one-letter word would match inside any text)."""
    return tuple(w for w in answer_words() if len(w) >= 2)


def marker_end(text: str, marker: re.Match[str]) -> int:
    """Where a marker found by `Patterns.marker` ends, with the closing brackets and quotes the pattern stops
    inside ("[[B]]]", "【C】”")."""
    end = marker.end()
    while end < len(text) and text[end] in "]】〕〗>)）”\"」』":
        end += 1
    return end


_LEADING_LABEL = re.compile(r"^" + OPEN + r"[^\W_]{1,2}")


def without_label(line: str) -> str:
    """A line without the option label it starts with ("[[C]]虽然……" -> "]]虽然……")."""
    return _LEADING_LABEL.sub("", line, count=1)


@dataclass(frozen=True)
class PhrasePatterns:
    """Compiled phrase patterns of one language set (case-insensitive, on NFKC text)."""

    line: re.Pattern[str]
    header: re.Pattern[str]
    answer_is: re.Pattern[str]
    lead: re.Pattern[str]
    tail: re.Pattern[str]
    cue: re.Pattern[str]
    hedge: re.Pattern[str]
    negation: re.Pattern[str]
    option_word: re.Pattern[str]
    tentative: re.Pattern[str]
    reopen: re.Pattern[str]
    no_answer: re.Pattern[str]
    new_question: re.Pattern[str]
    what_if: re.Pattern[str]
    farewell: re.Pattern[str]
    conditional: re.Pattern[str]
    reason: re.Pattern[str]
    alternative: re.Pattern[str]


@cache
def phrase_patterns(language: str | None = None) -> PhrasePatterns:
    cw = conclusion_words(language)
    line = re.compile(r"(?:^|(?<=[\s.!?。！？।]))[*#>_\-]*(?:" + phrase_alternation(answer_words())
                      + r")[\s*_]*[:：][\s*_]*(?P<value>.+?)\s*$", re.MULTILINE | re.IGNORECASE)
    header = re.compile(r"^[ \t*#>_\[【(（]*(?:" + phrase_alternation(answer_words())
                        + r")[ \t*_\]】)）]*[:：]?[ \t*_]*\n\s*(?P<value>[^\n]+)", re.MULTILINE | re.IGNORECASE)
    # the value is a lookahead: a later phrase on the same line ("The answer is not listed, but the closest option
    # is (J)", "a combination of (B, D, and F), but ... the most accurate answer would be (B)") is found too
    answer_is = re.compile(r"(?:" + phrase_alternation(words("answer_is")) + r")[\s*_:：]*(?=(?P<value>[^\n]+))",
                           re.IGNORECASE)
    lead = re.compile(r"(?:" + phrase_alternation(cw.answer_lead) + r")[\s*_:：,，\"“]*(?=(?P<value>[^\n]+))",
                      re.IGNORECASE)
    return PhrasePatterns(
        line, header, answer_is, lead,
        re.compile(phrase_alternation(cw.answer_tail), re.IGNORECASE),
        re.compile(phrase_alternation(cw.conclusion_cues), re.IGNORECASE),
        re.compile(phrase_alternation(cw.hedges), re.IGNORECASE),
        re.compile(phrase_alternation(cw.negations), re.IGNORECASE),
        re.compile(r"(?:" + phrase_alternation(words("option_words")) + r")\s*" + OPEN + r"(?P<letter>[^\W_]{1,2})"
                   + r"(?![^\W_])", re.IGNORECASE),
        re.compile(phrase_alternation(cw.tentative), re.IGNORECASE),
        re.compile(phrase_alternation(cw.reopen), re.IGNORECASE),
        re.compile(phrase_alternation(cw.no_answer), re.IGNORECASE),
        re.compile(r"[\[【]\s*(?:" + phrase_alternation(cw.new_question) + r")\s*[\]】]|"
                   + phrase_alternation(cw.next_question), re.IGNORECASE),
        re.compile(phrase_alternation(cw.what_if), re.IGNORECASE),
        re.compile(phrase_alternation(cw.farewell), re.IGNORECASE),
        re.compile(phrase_alternation(cw.conditional), re.IGNORECASE),
        re.compile(phrase_alternation(cw.reason), re.IGNORECASE),
        re.compile(phrase_alternation(cw.alternative), re.IGNORECASE),
    )


_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[^\W\d_]{3,}")


def cjk_pairs(text: str) -> frozenset[str]:
    """The character pairs of the CJK runs of `text` (cleaned): what an option in Chinese or Japanese is made of."""
    found: set[str] = set()
    for run in _CJK_RUN.findall(clean(text)):
        found.update(run[i:i + 2] for i in range(len(run) - 1))
    return frozenset(found)


def words_and_pairs(text: str) -> frozenset[str]:
    """`cjk_pairs` of `text` and its other words of three letters or more (lower case)."""
    norm = clean(text).lower()
    return cjk_pairs(norm) | frozenset(_LATIN_WORD.findall(_CJK_RUN.sub(" ", norm)))


_MATH = re.compile(r"\$\$[^$]{1,2000}?\$\$|\$[^$\n]{1,300}?\$|\\\([^\n]{1,300}?\\\)|\\\[[^$]{1,2000}?\\\]")


def math_masked(text: str) -> str:
    """`text` with its TeX math blanked out (same length), except where it holds a ``\\boxed``: the capitals of
    "$H$ is the enthalpy" or "\\frac{RT}{F}" are symbols, not options."""
    return _MATH.sub(lambda m: m.group() if "boxed" in m.group() else " " * len(m.group()), text)


def clean(text: str) -> str:
    """Comparison form of option texts and answers: normalised, punctuation to spaces (a decimal point or comma
    inside a number stays: "4.5 ft" does not hold the option "5 ft"), spaces collapsed."""
    norm = _DECIMAL.sub("\x00", normalise_text(text))
    norm = "".join(" " if (not ch.isalnum() and ch != "\x00" and not unicodedata.category(ch).startswith("M"))
                   else ch for ch in norm)
    return _SPACES.sub(" ", norm).replace("\x00", ".").strip()


@lru_cache(maxsize=1024)
def clean_options(options: tuple[str, ...]) -> tuple[str, ...]:
    """`clean` of each option, once per item (an answer's reading asks for them dozens of times)."""
    return tuple(clean(o) for o in options)


def bracketed(text: str, at: int) -> bool:
    """Whether the marker found at `at` stands in round brackets ("([[C]])"; the marker pattern may start at the
    bracket or just after it), or is closed by one ("[[D]]) ([[A]])": a chain of bracketed markers)."""
    opened = bool({"(", "（"} & set(text[max(0, at - 1):at + 1]))
    close = text.find("]]", at, at + 12)
    return opened or 0 <= close < len(text) - 2 and text[close + 2] in ")）"


def contains(haystack: str, needle: str) -> bool:
    """Whether the cleaned `needle` occurs in the cleaned `haystack` as whole words (anywhere, in CJK)."""
    if not needle or needle not in haystack:
        return False
    if NOSPACE.search(needle):
        return True
    return _whole_words(needle).search(haystack) is not None


@lru_cache(maxsize=4096)
def _whole_words(needle: str) -> re.Pattern[str]:
    # a number is not read inside a longer one either ("5 ft" is not in "4.5 ft", "2" not in "1,2", "65%" not in
    # "65.23%"; "65.0" is 65)
    number = r"(?<!\d[.,])" if needle[:1].isdigit() else ""
    decimals = r"(?!\.0*[1-9])(?!,\d)" if needle[-1:].isdigit() else ""
    return re.compile(rf"(?<![\w]){number}{re.escape(needle)}{decimals}(?![\w])")


def options_in(text: str, options: Sequence[str]) -> list[int]:
    """The options whose text `text` mentions, an option contained in another mentioned one left out."""
    hay = clean(text)
    cleaned = clean_options(tuple(options))
    found = [i for i, o in enumerate(cleaned) if contains(hay, o)]
    return [i for i in found if not any(j != i and cleaned[i] != cleaned[j] and contains(cleaned[j], cleaned[i])
                                        for j in found)]


def by_text(value: str, options: Sequence[str], *, reverse: bool) -> tuple[int | None, tuple[int, ...]]:
    """(index, ambiguous indices) of the option whose text `value` is or mentions; `reverse` also accepts a
    value of at least 3 characters contained in exactly one option (a shortened option)."""
    text = clean(value)
    if not text:
        return None, ()
    cleaned = clean_options(tuple(options))
    exact = [i for i, o in enumerate(cleaned) if o and o == text]
    if len(exact) == 1:
        return exact[0], ()
    found = options_in(value, options)
    if len(found) == 1:
        return found[0], ()
    if len(found) > 1:
        return None, tuple(found)
    if reverse and len(text) >= 3:
        inside = [i for i, o in enumerate(cleaned) if contains(o, text)]
        if len(inside) == 1:
            return inside[0], ()
    return None, ()
