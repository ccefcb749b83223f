"""Read the chosen option of a multiple-choice answer: a letter (A, B, C, D ...) from free model output.

Any benchmark with lettered options uses it (CulturalToM-VQA; a harness task with options). Order of evidence,
on the text after a closing ``</think>`` first, then on the whole answer:

1. JSON (`path="json"`): the last JSON object with an answer key (``answer``, ``choice``, ``option``, ``letter``
   and every vocabulary's answer keys, `culturekb.kb.vocab`) whose value names an option.
2. An answer line (`path="answer-line"`): the last line such as ``Answer: B``, ``**Final answer:** (C)``,
   ``Respuesta: B``, ``答案：B``, ``उत्तर: ख`` whose value names an option; or a phrase such as "the answer is B",
   "la respuesta es B", "答案是B" (words per language in ``culturekb/data/choice_words.json``).
3. A bare letter (`path="letter"`): the whole answer is one letter form (``B``, ``(B)``, ``B.``, ``[B]``,
   ``**B**``, ``选项B``, ``Option B``), or the answer starts with one followed by punctuation or that option's
   text (``B. Backpack``, ``B) ...``). "A man ..." is not read as A: a letter must be followed by punctuation, the
   end, or its own option's text.
4. The option's text instead of the letter (`path="option-text"`): the answer (or the answer line's value) is one
   option's text, or mentions exactly one option's text (an option contained in another matched one does not
   count against it). Text is compared in `normalise_text` form, so options in any script match.
5. Otherwise ``invalid`` (letter None): scored wrong, never dropped. An answer naming two options in the same
   rule (``Answer: A or C``) is ambiguous and invalid; `ambiguous` lists the letters it named.

Letters may be upper or lower case, full-width (``Ｂ``), or Arabic and Devanagari option letters (أ ب ج د,
क ख ग घ). Answers in other languages are read through their answer words and letters, or through the option
text when the options are in that language.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from culturekb.errors import ConfigError
from culturekb.inference._json_objects import json_objects
from culturekb.inference._lexicon import normalise_text
from culturekb.kb.vocab import load_vocabulary, vocabulary_languages

__all__ = ["ChoiceAnswer", "ChoicePath", "option_letters", "parse_choice"]

ChoicePath = Literal["json", "answer-line", "letter", "option-text", "invalid"]

_JSON_KEYS = ("answer", "final_answer", "choice", "option", "letter", "correct_option", "selected_option",
              "answer_letter", "prediction")
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_OPEN = r"[\(\[\{（【「<*_\s]*"
_CLOSE_PUNCT = r"[\)\]\}）】」>.:：、．,，;；!！?？。\-–—*_]"
_NOSPACE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0eff]")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ChoiceAnswer:
    """The option read from an answer: its `letter` (None when invalid), its 0-based `index`, and how."""

    letter: str | None
    index: int | None
    path: ChoicePath
    ambiguous: tuple[str, ...] = ()
    """The letters an ambiguous answer named (empty otherwise)."""

    @property
    def valid(self) -> bool:
        """Whether an option was read."""
        return self.letter is not None


def option_letters(n: int) -> tuple[str, ...]:
    """The letters of `n` options: A, B, C ... (2 to 26 options)."""
    if not 2 <= n <= 26:
        raise ConfigError(f"a multiple-choice item needs 2 to 26 options, got {n}")
    return tuple(string.ascii_uppercase[:n])


@cache
def _choice_words() -> dict[str, Any]:
    raw = json.loads(resources.files("culturekb.data").joinpath("choice_words.json").read_text("utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("answer_words"), dict):
        raise ConfigError("culturekb/data/choice_words.json: expected an object with 'answer_words', 'option_words', "
                          "'answer_is' and 'letters'; reinstall the package")
    return raw


def _words(section: str) -> list[str]:
    return [normalise_text(w) for ws in _choice_words()[section].values() for w in ws]


def _alternation(words: Sequence[str]) -> str:
    unique = sorted({w for w in words if w}, key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in unique)


@cache
def _answer_keys() -> frozenset[str]:
    keys = {k for k in _JSON_KEYS}
    for lang in vocabulary_languages():
        keys.update(_key(k) for k in load_vocabulary(lang).answer_keys)
    keys.update(_key(w) for w in _words("answer_words"))
    return frozenset(keys)


def _key(name: object) -> str:
    return re.sub(r"[\s\-]+", "_", normalise_text(str(name)).strip())


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(answer line, "the answer is" phrase, option word + letter) on normalised text."""
    answer_words = set(_words("answer_words"))
    for lang in vocabulary_languages():
        answer_words.update(normalise_text(k) for k in load_vocabulary(lang).answer_keys)
    line = re.compile(r"(?:^|(?<=[\s.!?。！？।]))[*#>_\-]*(?:" + _alternation(sorted(answer_words))
                      + r")[\s*_]*[:：][\s*_]*(?P<value>.+?)\s*$", re.MULTILINE)
    phrase = re.compile(r"(?:" + _alternation(_words("answer_is")) + r")[\s*_:：]*(?P<value>[^\n]+)")
    option = re.compile(r"(?:" + _alternation(_words("option_words")) + r")\s*" + _OPEN
                        + r"(?P<letter>[a-z])(?![a-z])")
    return line, phrase, option


@cache
def _letter_forms(n: int) -> dict[str, int]:
    """Every written form of the n option letters -> index: a..z (normalised case) and the script letters."""
    forms = {letter.lower(): i for i, letter in enumerate(option_letters(n))}
    for letters in _choice_words()["letters"].values():
        for i, form in enumerate(letters[:n]):
            forms[normalise_text(form)] = i
    return forms


def _clean(text: str) -> str:
    """Comparison form of option texts and answers: normalised, punctuation to spaces, spaces collapsed."""
    norm = normalise_text(text)
    norm = "".join(" " if (not ch.isalnum() and not _is_mark(ch)) else ch for ch in norm)
    return _SPACES.sub(" ", norm).strip()


def _is_mark(ch: str) -> bool:
    import unicodedata

    return unicodedata.category(ch).startswith("M")


def _contains(haystack: str, needle: str) -> bool:
    if not needle:
        return False
    if _NOSPACE.search(needle):
        return needle in haystack
    return re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", haystack) is not None


def _by_text(value: str, options: Sequence[str], *, reverse: bool) -> tuple[int | None, tuple[int, ...]]:
    """(index, ambiguous indices) of the option whose text `value` is or mentions; `reverse` also accepts a
    value of at least 3 characters contained in exactly one option (a shortened option)."""
    text = _clean(value)
    if not text:
        return None, ()
    cleaned = [_clean(o) for o in options]
    exact = [i for i, o in enumerate(cleaned) if o and o == text]
    if len(exact) == 1:
        return exact[0], ()
    found = [i for i, o in enumerate(cleaned) if _contains(text, o)]
    found = [i for i in found if not any(j != i and cleaned[i] != cleaned[j] and _contains(cleaned[j], cleaned[i])
                                         for j in found)]
    if len(found) == 1:
        return found[0], ()
    if len(found) > 1:
        return None, tuple(found)
    if reverse and len(text) >= 3:
        inside = [i for i, o in enumerate(cleaned) if _contains(o, text)]
        if len(inside) == 1:
            return inside[0], ()
    return None, ()


def _leading_letter(value: str, options: Sequence[str]) -> int | None:
    """The option a value starts with as a letter form: the letter alone, or followed by punctuation, or (upper
    case in the original) followed by that option's own text. None otherwise."""
    forms = _letter_forms(len(options))
    stripped = value.strip()
    m = re.match(_OPEN + r"(?P<letter>[^\W\d_]{1,2})(?P<rest>.*)$", stripped, re.DOTALL)
    if m is None:
        return None
    token, rest = normalise_text(m.group("letter")), m.group("rest")
    if token not in forms:
        return None
    index = forms[token]
    if not rest.strip() or re.match(r"\s*" + _CLOSE_PUNCT, rest):
        return index
    # "B Backpack" / "A man walks": only when the rest is that option's own text
    if rest[:1].isspace() and _clean(rest).startswith(_clean(options[index])) and _clean(options[index]):
        return index
    return None


_CONNECTORS = frozenset({"or", "and", "o", "ou", "oder", "y", "et", "und", "или", "и", "أو", "या", "或", "或者", "还是",
                         "と", "か", "au", "na"})


def _hedged_letters(value: str, options: Sequence[str]) -> tuple[int, ...]:
    """The letters of a value made only of two or more letters and connectors ("A or C", "B/D", "A、C")."""
    forms = _letter_forms(len(options))
    tokens = _clean(value).split()
    if len(tokens) == 1 and _NOSPACE.search(tokens[0]) is None:
        tokens = list(tokens[0]) if all(ch in forms for ch in tokens[0]) and len(tokens[0]) > 1 else tokens
    letters = [forms[t] for t in tokens if t in forms]
    if len(set(letters)) < 2 or any(t not in forms and t not in _CONNECTORS for t in tokens):
        return ()
    return tuple(dict.fromkeys(letters))


def _from_value(value: str, options: Sequence[str]) -> tuple[int | None, ChoicePath, tuple[int, ...]]:
    """An answer value (JSON value, answer line): a letter form, "option B", else the option's text."""
    index = _leading_letter(value, options)
    if index is not None:
        return index, "letter", ()
    hedge = _hedged_letters(value, options)
    if hedge:
        return None, "invalid", hedge
    m = _patterns()[2].match(normalise_text(value).strip(" *_"))
    if m is not None and m.group("letter") in _letter_forms(len(options)):
        return _letter_forms(len(options))[m.group("letter")], "letter", ()
    index, ambiguous = _by_text(value, options, reverse=True)
    return index, "option-text", ambiguous


def _from_json(text: str, options: Sequence[str]) -> tuple[int | None, tuple[int, ...]] | None:
    keys = _answer_keys()
    for _, _, obj in reversed(json_objects(text)):
        for k, v in obj.items():
            if _key(k) in keys and isinstance(v, str | int) and not isinstance(v, bool):
                index, _, ambiguous = _from_value(str(v), options)
                if index is not None or ambiguous:
                    return index, ambiguous
    return None


def _from_lines(text: str, options: Sequence[str]) -> tuple[int | None, tuple[int, ...]] | None:
    norm = normalise_text(text)
    line, phrase, _ = _patterns()
    hits = [(m.start(), m.group("value")) for m in line.finditer(norm)]
    hits += [(m.start(), m.group("value")) for m in phrase.finditer(norm)]
    for _, value in sorted(hits, reverse=True):
        index, _, ambiguous = _from_value(value, options)
        if index is not None:
            return index, ()
        if ambiguous:
            return None, ambiguous
    return None


def _from_letter(text: str, options: Sequence[str]) -> int | None:
    stripped = text.strip()
    first_line = stripped.splitlines()[0] if stripped else ""
    index = _leading_letter(first_line, options)
    if index is not None:
        return index
    m = _patterns()[2].fullmatch(normalise_text(stripped).strip(" *_.。:："))
    if m is not None and m.group("letter") in _letter_forms(len(options)):
        return _letter_forms(len(options))[m.group("letter")]
    return None


def _parse_one(text: str, options: Sequence[str]) -> ChoiceAnswer | None:
    letters = option_letters(len(options))

    def answer(index: int | None, path: ChoicePath, ambiguous: tuple[int, ...] = ()) -> ChoiceAnswer:
        if index is None:
            return ChoiceAnswer(None, None, "invalid", tuple(letters[i] for i in ambiguous))
        return ChoiceAnswer(letters[index], index, path)

    for rule, path in ((_from_json, "json"), (_from_lines, "answer-line")):
        found = rule(text, options)
        if found is not None:
            return answer(found[0], path, found[1])  # type: ignore[arg-type]
    index = _from_letter(text, options)
    if index is not None:
        return answer(index, "letter")
    index, ambiguous = _by_text(text, options, reverse=False)
    if index is not None or ambiguous:
        return answer(index, "option-text", ambiguous)
    return None


def parse_choice(text: str | None, options: Sequence[str]) -> ChoiceAnswer:
    """The option an answer chose among `options` (in letter order A, B, ...); see the module docstring for
    the rules. Never raises for a bad answer: an unreadable or ambiguous one is ``invalid``."""
    option_letters(len(options))  # checks the number of options
    raw = (text or "").strip()
    if not raw:
        return ChoiceAnswer(None, None, "invalid")
    parts = _THINK_END.split(raw)
    candidates = [parts[-1].strip(), raw] if len(parts) > 1 and parts[-1].strip() else [raw]
    first_invalid: ChoiceAnswer | None = None
    for candidate in candidates:
        found = _parse_one(candidate, options)
        if found is not None and found.valid:
            return found
        if found is not None and first_invalid is None:
            first_invalid = found
    return first_invalid or ChoiceAnswer(None, None, "invalid")
