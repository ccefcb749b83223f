"""Character n-gram candidates: the fallback for scripts written without spaces between words for which culturekb
has neither word lists nor a segmenter (Khmer, Lao, Burmese: `culturekb.text.scripts.NGRAM_SCRIPTS`).

Such text is cut at punctuation and spaces (these scripts put a space between phrases), then into letter clusters:
a letter with the marks that follow it (vowel signs, tone marks) and a Lao vowel written before it, a consonant
stacked under it by the script's joiner (the Khmer coeng, the Burmese virama), a Burmese final consonant (asat)
with its syllable. Each cluster of two or more characters and each pair of adjacent clusters is a candidate. These
are syllables and pieces of words, not words: no stopword or emotion word is known for these languages, so what a
build keeps from them is only what recurs in enough samples (min_support), and the warning for such text says so
(`culturekb.text.languages.warn_unsupported`).
"""

from __future__ import annotations

import unicodedata

from culturekb.text.scripts import NGRAM_SCRIPTS, script_of

__all__ = ["NGRAM_SCRIPTS", "letter_clusters", "ngram_candidates"]

_JOINERS = frozenset({"\u17d2", "\u1039"})
"""Khmer coeng and Myanmar virama: the consonant after one belongs to the cluster before it."""

_PREFIX_VOWELS = frozenset(chr(c) for c in range(0x0EC0, 0x0EC5))
"""Lao vowels written before their consonant (ເ ແ ໂ ໃ ໄ): they open the cluster of the letter after them."""

_ASAT = "\u103a"
"""The Myanmar asat: the consonant it marks ends the syllable before it (ကြောင်, cat, is one cluster)."""


def letter_clusters(phrase: str) -> list[str]:
    """The letter clusters of `phrase` (letters and marks of one script; see the module docstring)."""
    clusters: list[str] = []
    for ch in phrase:
        mark = unicodedata.category(ch)[0] == "M"
        if clusters and (mark or clusters[-1][-1] in _JOINERS or clusters[-1] in _PREFIX_VOWELS):
            if ch == _ASAT and len(clusters) > 1 and len(clusters[-1]) == 1:
                final = clusters.pop()  # a killed final consonant closes the syllable before it
                clusters[-1] += final
            clusters[-1] += ch
        else:
            clusters.append(ch)
    return clusters


def ngram_candidates(text: str) -> list[str]:
    """The n-gram candidates of `text` in text order: for each run of letters of an n-gram script (between
    spaces, punctuation, digits and other scripts), each letter cluster of two or more characters (a syllable
    or a word of one syllable: ឆ្មា, cat) and each pair of adjacent clusters (a word of two)."""
    out: list[str] = []
    run: list[str] = []
    for ch in unicodedata.normalize("NFC", text) + " ":
        if script_of(ch) in NGRAM_SCRIPTS:
            run.append(ch)
            continue
        clusters = letter_clusters("".join(run))
        run = []
        for i, cluster in enumerate(clusters):
            if len(cluster) >= 2:
                out.append(cluster)
            if i + 1 < len(clusters):
                out.append(cluster + clusters[i + 1])
    return out
