"""Where a model's answer turns into noise (degenerate decoding, quantisation damage): letters of many scripts in
one stretch, or one token repeated over and over. Used by `culturekb.inference.choices` to read an answer only up
to its noise."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

__all__ = ["degenerate_start"]

# scripts whose letters are rare in an answer; four of them in one stretch, or one token repeated over and over,
# is a model writing noise (degenerate decoding, quantisation damage), not an answer
_SCRIPT_NAMES = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "CYRILLIC", "ARABIC", "THAI", "DEVANAGARI", "GREEK",
                 "HEBREW", "BENGALI", "TAMIL", "ARMENIAN", "GEORGIAN", "ETHIOPIC", "LAO", "KHMER", "MYANMAR",
                 "GUJARATI", "TELUGU", "KANNADA", "MALAYALAM", "SINHALA", "TIBETAN", "LATIN")
_REPEATED = re.compile(r"(?<!\S)(\S{1,12})(?:\s+\1(?!\S)){11,}")
# a short unit of two or more different characters, none a letter or digit, glued to itself twenty times or more
# ("|->|->|->...", '=""=""=""')
_GLUED = re.compile(r"(\S{2,6}?)\1{19,}")
_PUNCTUATION_RUN = re.compile(r"(?:[^\w\s]|_){40,}")  # where such a unit can be (found first: a linear scan)
_DASH_LINES = re.compile(r"(?:^[ \t]*[-–—][ \t]*\n){5,}", re.MULTILINE)  # "  -\n  -\n  -\n ...": five lines or more
_WINDOW = 160
# numbers strung together without arithmetic ("2625 23934 5500 5118  138 1288  17 ..."): four in five of a stretch's
# tokens, with no operator among them (a calculation has one)
_TOKEN = re.compile(r"\S+")
_NUMBER = re.compile(r"\d[\d.,:\-]*")
_ARITHMETIC = re.compile(r"[=+*/×÷^%$<>]")


@lru_cache(maxsize=65536)
def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    if ch.isascii():
        return "LATIN"
    name = unicodedata.name(ch, "")
    for script in _SCRIPT_NAMES:
        if name.startswith(script):
            return "KANA" if script in ("HIRAGANA", "KATAKANA") else script
    return "OTHER"


def degenerate_start(text: str) -> int | None:
    """Where an answer turns into noise: a stretch of about 160 characters with letters of four or more scripts, or
    of three with one besides Latin, CJK, kana and Greek (the noise starts at the first letter outside Latin and CJK
    there), one token repeated a dozen times, a short unit of punctuation glued to itself twenty times
    ("|->|->|->"), five lines or more of a lone dash, or a stretch of numbers strung together without arithmetic
    ("2625 23934 5500 5118 138 ..."). None
    for an answer without noise."""
    starts: list[int] = []
    m = _REPEATED.search(text)
    if m is not None and re.search(r"\w", m.group(1)):
        starts.append(m.start())
    dashes = _DASH_LINES.search(text)
    if dashes is not None:
        starts.append(dashes.start())
    for run in _PUNCTUATION_RUN.finditer(text):
        glued = next((g for g in _GLUED.finditer(text, run.start(), run.end()) if len(set(g.group(1))) >= 2), None)
        if glued is not None:
            starts.append(glued.start())
            break
    scripts = [_script(ch) for ch in text]
    allowed: frozenset[str] | None = None
    for w in range(0, max(1, len(text) - _WINDOW // 2), _WINDOW // 2):
        seen = {sc for sc in scripts[w:w + _WINDOW] if sc}
        if len(seen) < 3:
            continue  # no rule below applies: the answer's own scripts are counted only where one might
        if allowed is None:
            allowed = _allowed(scripts)
        if allowed:  # an answer in Korean, Japanese, Russian, Hindi ...: its own script is no noise
            foreign = seen - allowed
            if foreign:
                starts.append(next(i for i in range(w, min(len(text), w + _WINDOW)) if scripts[i] in foreign))
                break
        elif len(seen) >= 4 or seen - {"LATIN", "CJK", "KANA", "GREEK"}:
            first = next(i for i in range(w, min(len(text), w + _WINDOW))
                         if scripts[i] and scripts[i] not in ("LATIN", "CJK"))
            starts.append(first)
            break
    numbers = _numbers_start(text)
    if numbers is not None:
        starts.append(numbers)
    return min(starts) if starts else None


_COMMON = frozenset({"LATIN", "GREEK"})  # the letters of names, units and formulas in an answer in any language
_BESIDE = {"KANA": frozenset({"CJK"}), "HANGUL": frozenset({"CJK"})}  # kanji beside kana; hanja beside hangul


def _allowed(scripts: list[str | None]) -> frozenset[str]:
    """The scripts an answer may mix without noise when it is written in a script besides Latin and Chinese:
    that script (three in five of its letters outside Latin and Greek, and a tenth of all its letters), the
    scripts written beside it, Latin and Greek (a Korean calculation with "μ" and "R" is no noise). For an
    answer in English or Chinese, whose rule is the one above (four scripts, or three with one besides Latin, CJK,
    kana and Greek): empty."""
    letters = sum(sc is not None for sc in scripts)
    counts = Counter(sc for sc in scripts if sc and sc not in _COMMON)
    total = sum(counts.values())
    if not total:
        return frozenset()
    home, n = counts.most_common(1)[0]
    if home == "CJK" and counts["KANA"] >= 0.2 * total:
        home, n = "KANA", n + counts["KANA"]  # Japanese: kanji and kana together
    # written in it: a tenth of all its letters at least (not a few foreign letters in an English answer's noise)
    if n < 0.6 * total or n < 0.1 * letters or home in ("CJK", "OTHER"):
        return frozenset()
    return _COMMON | {home} | _BESIDE.get(home, frozenset())


def _numbers_start(text: str) -> int | None:
    """Where a stretch of about 160 characters of 15 or more tokens, four in five of them numbers and none an
    operator, begins (at its first digit)."""
    for w in range(0, max(1, len(text) - _WINDOW // 2), _WINDOW // 2):
        stretch = text[w:w + _WINDOW]
        tokens = _TOKEN.findall(stretch)
        if (len(tokens) >= 15 and sum(_NUMBER.fullmatch(tok) is not None for tok in tokens) >= 0.8 * len(tokens)
                and _ARITHMETIC.search(stretch) is None):
            return w + next(i for i, ch in enumerate(stretch) if ch.isdigit())
    return None
