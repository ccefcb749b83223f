"""People's names in free text and in painting slugs: they name a person, not a cultural concept.

Three rules, each conservative (a word they miss stays a concept; a word they take is lost):

1. **Artist**: the tokens of a sample's artist (`Sample.metadata["artist"]`, which the ArtEmis/ArtELingo loader
   fills from the WikiArt slug ``artist-name_title``, or the slug prefix of a raw slug title) are names wherever
   they occur in that sample ("Van Gogh's sunflowers" on a van Gogh painting keeps only sunflowers).
2. **Particles and titles**: a name particle of the language (van, von, de, da ... in `[name_particles]`) directly
   followed by a capitalised word makes both a name (``van Gogh``, ``da Vinci``); a capitalised word after a
   title (Mr, Mrs, Dr, Señora ... in `[name_titles]`) is a name (``Mr. Smith``).
3. **Capitalisation** (languages whose files set ``names_by_case``; not German, whose nouns are all capitalised, nor
   Russian, whose social-media text capitalises too freely to tell):
   a capitalised word that does not start a sentence (after . ! ? : ; quotes, brackets, a line break or an emoji),
   does not follow an article or determiner ("the City") and is not a known word of the language (its word
   lists, the caller's known words, or a word the same sample also writes in lower case) is a name, and so is an
   unknown capitalised word right next to a name (``Vincent`` in ``Vincent van Gogh``). With ``names_by_case =
   pairs`` (Latin-script languages whose word lists are too small to know their common nouns: es fr pt sw) only
   two or more such words in a row count (``Álvaro Uribe``), never one alone. A text written mostly in capitals
   (Title Case, ALL CAPS) is left to rules 1 and 2.

Words in `[proper_concepts]` (God, Christ, Buddha, nationalities ...) are concepts, never names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from culturekb.kb.schema import Sample
from culturekb.text.languages import LanguageRules, word_tokens

__all__ = ["Token", "artist_tokens", "name_positions"]

_JOINERS = frozenset(" -\u00a0")  # what may stand between two words of one name ("Toulouse-Lautrec")
_INSIDE_SENTENCE = frozenset(" \u00a0,-'’")  # a gap of only these does not start a sentence
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "our",
                          "their", "its", "some", "any", "every", "each", "no"})


@dataclass(frozen=True)
class Token:
    """One word of a text: where it is, as written (possessive 's removed), and lowercased."""

    start: int
    end: int
    text: str
    lower: str


def artist_tokens(sample: Sample) -> frozenset[str]:
    """The lowercased words of the sample's artist (`metadata["artist"]`, else the artist part of a WikiArt slug
    title ``artist-name_title``), two letters or longer."""
    artist = sample.metadata.get("artist") if isinstance(sample.metadata, dict) else None
    if not artist and sample.title and "_" in sample.title and not any(ch.isspace() for ch in sample.title):
        artist = sample.title.split("_", 1)[0]
    if not artist or not isinstance(artist, str):
        return frozenset()
    return frozenset(t for t in word_tokens(re.sub(r"[-_]+", " ", artist)) if len(t) >= 2 and not t.isdigit())


def _capitalised(tok: Token) -> bool:
    return len(tok.text) >= 2 and tok.text[0].isupper() and not tok.text.isupper()


def _mostly_capitalised(tokens: Sequence[Token], initial: Sequence[bool]) -> bool:
    """Title Case or ALL CAPS: at least 60% of the words of three or more letters that do not start a sentence
    begin with a capital."""
    words = [t for t, first in zip(tokens, initial, strict=True) if not first and len(t.text) >= 3 and t.text.isalpha()]
    return bool(words) and sum(t.text[0].isupper() for t in words) >= 0.6 * len(words)


def name_positions(
    text: str,
    tokens: Sequence[Token],
    rules: LanguageRules,
    known: Callable[[str], bool],
    artist: frozenset[str] = frozenset(),
) -> dict[int, str]:
    """The indices of `tokens` (words of `text`, in order) that are people's names, each with the rule that took
    it ("artist", "particle", "title", "case"; see the module docstring). `known(lower)` says whether a lowercased
    word is a known word of the language."""
    n = len(tokens)
    gaps = [text[tokens[i - 1].end : tokens[i].start] if i else "" for i in range(n)]
    joined = [i > 0 and bool(gaps[i]) and all(c in _JOINERS for c in gaps[i]) for i in range(n)]
    initial = [i == 0 or any(c not in _INSIDE_SENTENCE for c in gaps[i]) for i in range(n)]
    cap = [_capitalised(t) and t.lower not in rules.proper_concepts for t in tokens]
    determiners = rules.articles | (_DETERMINERS if rules.code == "en" else frozenset())
    names: dict[int, str] = {}
    for i, tok in enumerate(tokens):
        if tok.lower in artist:
            names[i] = "artist"
        nxt = i + 1 < n and cap[i + 1]
        if nxt and joined[i + 1] and tok.lower in rules.name_particles:
            names.setdefault(i, "particle")
            names.setdefault(i + 1, "particle")
        if nxt and tok.lower in rules.name_titles and all(c in _JOINERS or c == "." for c in gaps[i + 1]):
            names.setdefault(i + 1, "title")
    if rules.names_by_case == "no" or _mostly_capitalised(tokens, initial):
        return names
    candidate = [cap[i] and not known(t.lower) and not (i > 0 and tokens[i - 1].lower in determiners and joined[i])
                 for i, t in enumerate(tokens)]
    for i in range(n):
        if not candidate[i]:
            continue
        if rules.names_by_case == "yes" and not initial[i]:
            names.setdefault(i, "case")
        elif i + 1 < n and candidate[i + 1] and joined[i + 1] and not (initial[i] and initial[i + 1]):
            names.setdefault(i, "case")
            names.setdefault(i + 1, "case")
    changed = True
    while changed:  # an unknown capitalised word next to a name is part of it ("Vincent" van Gogh)
        changed = False
        for i in range(n):
            if i in names or not cap[i] or known(tokens[i].lower):
                continue
            if (i + 1 < n and i + 1 in names and joined[i + 1]) or (i > 0 and i - 1 in names and joined[i]):
                names[i] = "case"
                changed = True
    return names
