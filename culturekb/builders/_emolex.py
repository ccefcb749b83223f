"""The NRC Emotion Lexicon in German, Spanish and Russian, for the lexicon judge (`culturekb.builders.judges`).

The word lists are NRC's translations of EmoLex as packaged by `emoatlas` 0.1.6 (`emoatlas/langs/<language>.json`
and `<language>_idiomatic_tokens.json`, copied unchanged into `culturekb/data/lexicons/`; see NOTICE.md there). A
multi-word entry is stored under a code (``es00002``) that the idiomatic-tokens file maps its words to; here it
is read back as the word sequence. The lists hold dictionary forms, so a word of a rationale is looked up as it
is, then by a crude stem: the longest of a few inflection endings of the language cut off (at least four letters
left), the same cut being made to the list's words (German "Hoffnungen" -> "hoffnung"; Spanish "tristes" and
"triste" -> "trist"; Russian "страха" -> "страх"). A stem that list words with different emotions share is dropped.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from culturekb.errors import DataError

__all__ = ["TRANSLATED_LEXICONS", "TranslatedLexicon", "lexicon_hits", "translated_lexicon"]

TRANSLATED_LEXICONS: dict[str, str] = {"de": "german", "es": "spanish", "ru": "russian"}
"""Language code -> the emoatlas file stem of its EmoLex translation."""

_ENDINGS: dict[str, tuple[str, ...]] = {
    "de": ("ern", "em", "en", "er", "es", "e", "n", "s"),
    "es": ("mente", "es", "os", "as", "o", "a", "e", "s"),
    "ru": ("ами", "ями", "ого", "его", "ому", "ему", "ыми", "ими", "ться", "тся", "ой", "ей", "ий", "ый", "ая", "яя",
           "ое", "ее", "ые", "ие", "ую", "юю", "ом", "ем", "ам", "ям", "ах", "ях", "ов", "ев", "ть", "а", "я", "о",
           "е", "ы", "и", "у", "ю", "ь"),
}


def crude_stem(word: str, language: str) -> str:
    """`word` without the longest listed inflection ending of `language` that leaves at least four letters."""
    for ending in sorted(_ENDINGS.get(language, ()), key=len, reverse=True):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


@dataclass(frozen=True)
class TranslatedLexicon:
    """One language's EmoLex words (word -> Plutchik emotions), the same by crude stem, and multi-word entries."""

    language: str
    words: dict[str, tuple[str, ...]]
    stems: dict[str, tuple[str, ...]]
    phrases: dict[tuple[str, ...], tuple[str, ...]]


def _read(name: str) -> dict[str, object]:
    where = f"culturekb/data/lexicons/{name}"
    try:
        raw = json.loads(resources.files("culturekb.data").joinpath("lexicons", name).read_text("utf-8"))
    except FileNotFoundError as exc:
        raise DataError(f"{where} is missing; reinstall culturekb") from exc
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object")
    return raw


@lru_cache(maxsize=8)
def translated_lexicon(language: str) -> TranslatedLexicon:
    """The EmoLex translation of `language` (one of `TRANSLATED_LEXICONS`), restricted to Plutchik's 8 emotions."""
    stem_name = TRANSLATED_LEXICONS[language]
    raw = _read(f"emoatlas_{stem_name}.json")
    idioms = {str(code): str(phrase) for phrase, code in _read(f"emoatlas_{stem_name}_idiomatic_tokens.json").items()}
    plutchik = {"anger", "anticipation", "disgust", "fear", "joy", "sadness", "surprise", "trust"}
    words: dict[str, tuple[str, ...]] = {}
    phrases: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, emotions in raw.items():
        emos = tuple(e for e in (emotions if isinstance(emotions, list) else []) if e in plutchik)
        if not emos:
            continue
        form = unicodedata.normalize("NFKC", idioms.get(key, key)).lower().strip()
        if " " in form:
            phrases[tuple(form.split())] = emos
        elif form:
            words[form] = emos
    by_stem: dict[str, set[tuple[str, ...]]] = {}
    for w, emos in words.items():
        by_stem.setdefault(crude_stem(w, language), set()).add(emos)
    stems = {s: next(iter(e)) for s, e in by_stem.items() if len(e) == 1}
    return TranslatedLexicon(language, words, stems, phrases)


def lexicon_hits(tokens: list[str], language: str, skip: set[int]) -> list[tuple[str, tuple[str, ...]]]:
    """(matched form, emotions) for the EmoLex entries of `language` among `tokens` (lowercased words), leaving out
    the positions in `skip` (negated ones, label words already counted): multi-word entries first, then each word
    as it is or by its crude stem."""
    lex = translated_lexicon(language)
    out: list[tuple[str, tuple[str, ...]]] = []
    used = set(skip)
    longest = max((len(p) for p in lex.phrases), default=0)
    for n in range(longest, 1, -1):
        for i in range(len(tokens) - n + 1):
            span = tuple(tokens[i : i + n])
            if span in lex.phrases and not used.intersection(range(i, i + n)):
                out.append((" ".join(span), lex.phrases[span]))
                used.update(range(i, i + n))
    for i, tok in enumerate(tokens):
        if i in used:
            continue
        emos = lex.words.get(tok) or lex.stems.get(crude_stem(tok, language))
        if emos:
            out.append((tok, emos))
    return out
