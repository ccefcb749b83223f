"""Writing systems: the script of a letter, the script most of a text is written in, and the language assumed
for a script. The lowest text module: `culturekb.text.normalise` and `culturekb.text.languages` both read it."""

from __future__ import annotations

import unicodedata

__all__ = ["NGRAM_SCRIPTS", "SCRIPT_LANGUAGE", "script_of", "dominant_script"]

SCRIPT_LANGUAGE: dict[str, str] = {
    "latin": "en", "han": "zh", "kana": "ja", "arabic": "ar", "devanagari": "hi", "cyrillic": "ru",
    "hangul": "ko", "ethiopic": "am", "thai": "th", "greek": "el", "hebrew": "he", "armenian": "hy",
    "bengali": "bn", "tamil": "ta", "lao": "lo", "myanmar": "my", "georgian": "ka", "khmer": "km",
}
"""The language assumed for text in a script when the sample's own language does not use that script."""

NGRAM_SCRIPTS: frozenset[str] = frozenset({"khmer", "lao", "myanmar"})
"""Scripts written without spaces between words for which culturekb has neither word lists nor a segmenter: their
text is read as character n-grams (`culturekb.text.ngrams`), not as words."""

# (first code point, last code point, script), sorted; letters outside these ranges are "other".
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"), (0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"),
    (0x0530, 0x058F, "armenian"), (0x0590, 0x05FF, "hebrew"), (0x0600, 0x06FF, "arabic"),
    (0x0750, 0x077F, "arabic"), (0x0900, 0x097F, "devanagari"), (0x0980, 0x09FF, "bengali"),
    (0x0B80, 0x0BFF, "tamil"), (0x0E00, 0x0E7F, "thai"), (0x0E80, 0x0EFF, "lao"), (0x1000, 0x109F, "myanmar"),
    (0x10A0, 0x10FF, "georgian"), (0x1100, 0x11FF, "hangul"), (0x1200, 0x139F, "ethiopic"),
    (0x1780, 0x17FF, "khmer"), (0x19E0, 0x19FF, "khmer"), (0x1C90, 0x1CBF, "georgian"),
    (0x1E00, 0x1EFF, "latin"), (0x2D00, 0x2D2F, "georgian"), (0x3040, 0x309F, "kana"), (0x30A0, 0x30FF, "kana"),
    (0x3130, 0x318F, "hangul"), (0x31F0, 0x31FF, "kana"), (0x3400, 0x4DBF, "han"), (0x4E00, 0x9FFF, "han"),
    (0xA9E0, 0xA9FF, "myanmar"), (0xAA60, 0xAA7F, "myanmar"), (0xAC00, 0xD7AF, "hangul"), (0xF900, 0xFAFF, "han"),
    (0xFB50, 0xFDFF, "arabic"), (0xFE70, 0xFEFF, "arabic"), (0xFF66, 0xFF9F, "kana"), (0x20000, 0x2FA1F, "han"),
)


def script_of(ch: str) -> str | None:
    """The script of one letter or mark ("latin", "han", "kana", "arabic" ...), "other", or None for a non-letter."""
    cat = unicodedata.category(ch)
    if cat[0] not in "LM":
        return None
    cp = ord(ch)
    if cp == 0x30FC:  # the katakana length mark is category Lm
        return "kana"
    for lo, hi, name in _SCRIPT_RANGES:
        if cp < lo:
            break
        if cp <= hi:
            return name
    return "other"


def dominant_script(text: str) -> str | None:
    """The script most letters of `text` are written in (ties: the first seen); None when it has no letters."""
    counts: dict[str, int] = {}
    for ch in text:
        s = script_of(ch)
        if s is not None and unicodedata.category(ch)[0] == "L":
            counts[s] = counts.get(s, 0) + 1
    return max(counts, key=lambda s: counts[s]) if counts else None
