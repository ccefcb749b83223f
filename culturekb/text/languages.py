"""Languages of the text layer: word lists as data, scripts, tokenisation and CJK segmentation.

Every language the offline concept extractor reads has a data file `culturekb/data/languages/<code>.txt`
(English keeps `stopwords_en.txt` and `text_concepts_en.txt`); each file names its sources (see `NOTICE.md`
there). A file holds the language's stopwords, the words that are never concepts (the picture or text itself,
judgements, feelings), leading articles, and for Chinese and Japanese the characters and particles that the
dictionary-free segmentation uses. Emotion words come from the label vocabularies (`culturekb.kb.vocab`) and
the packaged emotion schemes, so that a concept never names its own label.

Tokenisation: space-separated languages are split into runs of letters, combining marks and digits (Python's
``\\w`` splits Devanagari and vowelled Arabic at their marks, so it is not used). Chinese: text between
punctuation is cut at stopwords, emotion words and function characters (的, 了, 我 ...), and the pieces of two
to four characters are the word candidates (a longer piece gives its overlapping character bigrams).
Japanese: runs of kanji and of katakana are the candidates (a single kanji only before a particle such as が or
の), hiragana being mostly grammar. A language without a file is a clear error (`language_rules`), or, for
text whose language is guessed, a one-time warning and no concepts from that text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from culturekb._io import sha256_text
from culturekb.errors import ConfigError, CultureKBError, DataError

__all__ = [
    "LanguageRules",
    "SCRIPT_LANGUAGE",
    "base_language",
    "culture_language",
    "dominant_script",
    "emotion_words",
    "is_emotion_word",
    "language_rules",
    "script_of",
    "segment_cjk",
    "supported_languages",
    "warn_unsupported",
    "word_tokens",
    "words_sha",
]

logger = logging.getLogger(__name__)

_DATA_DIR = "languages"
_SEGMENTATIONS = ("spaces", "han", "japanese")

SCRIPT_LANGUAGE: dict[str, str] = {
    "latin": "en", "han": "zh", "kana": "ja", "arabic": "ar", "devanagari": "hi", "cyrillic": "ru",
    "hangul": "ko", "ethiopic": "am", "thai": "th", "greek": "el", "hebrew": "he",
}
"""The language assumed for text in a script when the sample's own language does not use that script."""

# (first code point, last code point, script), sorted; letters outside these ranges are "other".
_SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"), (0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"), (0x0600, 0x06FF, "arabic"), (0x0750, 0x077F, "arabic"),
    (0x0900, 0x097F, "devanagari"), (0x0E00, 0x0E7F, "thai"), (0x1100, 0x11FF, "hangul"),
    (0x1200, 0x139F, "ethiopic"), (0x1E00, 0x1EFF, "latin"), (0x3040, 0x309F, "kana"), (0x30A0, 0x30FF, "kana"),
    (0x3130, 0x318F, "hangul"), (0x31F0, 0x31FF, "kana"), (0x3400, 0x4DBF, "han"), (0x4E00, 0x9FFF, "han"),
    (0xAC00, 0xD7AF, "hangul"), (0xF900, 0xFAFF, "han"), (0xFB50, 0xFDFF, "arabic"), (0xFE70, 0xFEFF, "arabic"),
    (0xFF66, 0xFF9F, "kana"), (0x20000, 0x2FA1F, "han"),
)


def base_language(code: str | None) -> str:
    """The primary language subtag of a code, lowercased: "zh-Hant" -> "zh", "pt_BR" -> "pt"; "" for None."""
    return (code or "").strip().lower().replace("_", "-").split("-")[0]


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


@lru_cache(maxsize=1)
def _token_pattern() -> re.Pattern[str]:
    """Runs of letters, combining marks and digits (all of Unicode's M categories added to ``[^\\W_]``)."""
    marks = "".join(chr(c) for c in range(0x0300, 0x10000) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me"))
    return re.compile(f"(?:[^\\W_]|[{re.escape(marks)}])+")


def word_tokens(text: str) -> list[str]:
    """The words of `text`, NFKC-normalised and lowercased: runs of letters, marks and digits."""
    return _token_pattern().findall(unicodedata.normalize("NFKC", text).lower())


# ----------------------------------------------------------------------------------------------------------
# word lists
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LanguageRules:
    """One language's word lists and how its text is cut into words (from `data/languages/<code>.txt`)."""

    code: str
    name: str
    script: str
    segmentation: str
    min_chars: int
    stopwords: frozenset[str]
    non_concepts: frozenset[str]
    articles: frozenset[str] = frozenset()
    function_chars: frozenset[str] = frozenset()
    particles: tuple[str, ...] = ()
    locatives: tuple[str, ...] = ()
    trailing_verbs: tuple[str, ...] = ()
    sha: str = ""

    @property
    def spaced(self) -> bool:
        """Whether words are separated by spaces (everything but Chinese and Japanese here)."""
        return self.segmentation == "spaces"


def _read(name: str) -> str | None:
    try:
        return resources.files("culturekb.data").joinpath(name).read_text("utf-8")
    except FileNotFoundError:
        return None


@lru_cache(maxsize=1)
def supported_languages() -> tuple[str, ...]:
    """The languages with word lists: English plus one file per language under `culturekb/data/languages/`."""
    folder = resources.files("culturekb.data").joinpath(_DATA_DIR)
    codes = sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))
    return ("en", *codes)


def _sections(text: str, where: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1].strip(), [])
            continue
        if current is None:
            raise DataError(f"{where}: entry {line!r} before the first [section]")
        current.append(unicodedata.normalize("NFKC", line).lower())
    return out


@lru_cache(maxsize=64)
def language_rules(language: str) -> LanguageRules:
    """The word lists of `language` (a code such as "zh" or "pt-BR"); ConfigError for a language without any."""
    code = base_language(language)
    if code == "en":
        from culturekb.text.normalise import english_stopwords

        stop = english_stopwords()
        return LanguageRules("en", "English", "latin", "spaces", 3, stop, frozenset(),
                             frozenset({"a", "an", "the"}), sha=sha256_text("\n".join(sorted(stop))))
    where = f"culturekb/data/{_DATA_DIR}/{code}.txt"
    text = _read(f"{_DATA_DIR}/{code}.txt") if code else None
    if text is None:
        raise ConfigError(
            f"no word lists for language {language!r} (looked for {where}); the offline text concept extractor "
            f"reads {list(supported_languages())}. Add a file like culturekb/data/{_DATA_DIR}/es.txt for it, or use "
            "the 'vlm' or 'clip' extractor or precomputed concepts"
        )
    sec = _sections(text, where)
    settings: dict[str, str] = {}
    for line in sec.get("settings", []):
        key, sep, value = line.partition("=")
        if not sep:
            raise DataError(f"{where}: [settings] line {line!r} is not 'key = value'")
        settings[key.strip()] = value.strip()
    segmentation = settings.get("segmentation", "spaces")
    if segmentation not in _SEGMENTATIONS:
        raise DataError(f"{where}: segmentation {segmentation!r} is not one of {list(_SEGMENTATIONS)}")
    try:
        min_chars = int(settings.get("min_chars", "3"))
    except ValueError as exc:
        raise DataError(f"{where}: min_chars must be an integer, got {settings.get('min_chars')!r}") from exc
    return LanguageRules(
        code=code,
        name=settings.get("name", code),
        script=settings.get("script", "latin"),
        segmentation=segmentation,
        min_chars=min_chars,
        stopwords=frozenset(sec.get("stopwords", [])),
        non_concepts=frozenset(sec.get("non_concepts", [])),
        articles=frozenset(sec.get("articles", [])),
        function_chars=frozenset(sec.get("function_chars", [])),
        particles=tuple(sec.get("particles", [])),
        locatives=tuple(sec.get("locatives", [])),
        trailing_verbs=tuple(sec.get("trailing_verbs", [])),
        sha=sha256_text(text),
    )


def words_sha(languages: Iterable[str] | None = None) -> str:
    """One hash over the word lists (and emotion words) of `languages` (default: every supported language)."""
    langs = sorted(languages) if languages is not None else list(supported_languages())
    parts = []
    for lang in langs:
        exact, stems, endings = emotion_words(lang)
        parts += [lang, language_rules(lang).sha, *sorted(exact), *sorted(stems), *sorted(endings)]
    return sha256_text("\n".join(parts))


_EMOTION_SCHEMES = ("artemis9", "cedar14", "plutchik8")


@lru_cache(maxsize=64)
def emotion_words(language: str) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    """(words, stems, endings) that name an emotion in `language`: the labels, synonyms, translations and label
    vocabulary words of the packaged emotion schemes (a vocabulary form ending in '*' is a stem, one starting
    with '*' an ending)."""
    from culturekb.kb.schemes import get_scheme

    code = base_language(language)
    forms: set[str] = set()
    for name in _EMOTION_SCHEMES:  # emotion label sets only; a category scheme (ricevl14) names real concepts
        scheme = get_scheme(name)
        forms.update(scheme.surface_forms(code))
        for words in scheme.vocabulary.get(code, {}).values():
            forms.update(words)
    exact: set[str] = set()
    stems: set[str] = set()
    endings: set[str] = set()
    for raw in forms:
        f = unicodedata.normalize("NFKC", raw).lower().strip()
        if f.endswith("*") and len(f) > 2:
            stems.add(f[:-1])
        elif f.startswith("*") and len(f) > 2:
            endings.add(f[1:])
        elif f and "*" not in f:
            exact.add(f)
    return frozenset(exact), tuple(sorted(stems)), tuple(sorted(endings))


def is_emotion_word(word: str, language: str) -> bool:
    """Whether `word` (lowercase) names an emotion in `language` (see `emotion_words`)."""
    exact, stems, endings = emotion_words(language)
    return word in exact or word.startswith(stems) or (len(word) > 3 and word.endswith(endings))


@lru_cache(maxsize=4096)
def culture_language(culture: str) -> str | None:
    """The language of a culture id or alias in the culture registry; a culture the registry lacks whose id is a
    language with word lists ("de", "pt-BR") is that language; else None."""
    from culturekb.kb.cultures import default_registry

    try:
        return base_language(default_registry().resolve(culture).language) or None
    except CultureKBError:
        code = base_language(culture)
        return code if code in supported_languages() else None


_WARNED: set[str] = set()


def warn_unsupported(language: str, script: str | None) -> None:
    """Log once per language that its text gives no concepts."""
    if language in _WARNED:
        return
    _WARNED.add(language)
    logger.warning(
        "no word lists for language %r (%s script): its texts give no text concepts. Languages read: %s. Add "
        "culturekb/data/languages/%s.txt, or use precomputed, 'vlm' or 'clip' concepts",
        language, script or "unknown", ", ".join(supported_languages()), language,
    )


# ----------------------------------------------------------------------------------------------------------
# Chinese and Japanese
# ----------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _cjk_boundaries(language: str) -> tuple[frozenset[str], int]:
    """Words that end a candidate in a no-space language (stopwords, non-concepts, emotion words, function
    characters), and the longest of them."""
    rules = language_rules(language)
    exact, stems, _ = emotion_words(language)
    cjk = {w for w in (*exact, *stems) if w and all(script_of(c) in ("han", "kana") for c in w)}
    words = set(rules.stopwords) | set(rules.non_concepts) | cjk | set(rules.function_chars)
    words = {w.replace(" ", "") for w in words if w}
    if language == "zh":  # a single character ends a candidate only when it is a listed function character
        words = {w for w in words if len(w) >= 2} | set(rules.function_chars)
    return frozenset(words), max((len(w) for w in words), default=1)


def _cut(run: str, boundaries: frozenset[str], longest: int) -> list[str]:
    """`run` cut at every boundary word (greedy longest match, left to right); the pieces between them."""
    pieces: list[str] = []
    start = i = 0
    n = len(run)
    while i < n:
        hit = next((k for k in range(min(longest, n - i), 0, -1) if run[i : i + k] in boundaries), 0)
        if hit:
            if i > start:
                pieces.append(run[start:i])
            i += hit
            start = i
        else:
            i += 1
    if start < n:
        pieces.append(run[start:])
    return pieces


def _script_runs(text: str) -> list[tuple[str, str | None]]:
    """`text` as consecutive (run, script) pairs; digits and symbols are runs of script None."""
    runs: list[tuple[str, str | None]] = []
    for ch in text:
        s = script_of(ch)
        if runs and runs[-1][1] == s:
            runs[-1] = (runs[-1][0] + ch, s)
        else:
            runs.append((ch, s))
    return runs


def segment_cjk(clause: str, language: str) -> list[str]:
    """Word candidates of one clause (no punctuation inside) of Chinese or Japanese text, in text order.

    Chinese: each run of Han characters is cut at boundary words (see `_cjk_boundaries`); a listed locative or
    one-character verb at the end of a piece of three or more characters is dropped (满月下 -> 满月, 女人骑 ->
    女人); pieces of 2 to 4 characters are candidates,
    a longer piece gives its overlapping bigrams. Japanese: the clause is cut at
    boundary words first; then runs of katakana (2+ characters) and of kanji are candidates, a single kanji only
    when a listed particle or the end of the clause follows it; a kanji run over 6 characters gives its bigrams.
    Runs in other scripts are left out (the caller reads them with their own language's rules).
    """
    rules = language_rules(language)
    boundaries, longest = _cjk_boundaries(rules.code)
    out: list[str] = []
    if rules.segmentation == "han":
        for run, script in _script_runs(clause):
            if script != "han":
                continue
            for piece in _cut(run, boundaries, longest):
                while len(piece) >= 3 and piece.endswith((*rules.locatives, *rules.trailing_verbs)):
                    piece = piece[:-1]
                if len(piece) < rules.min_chars:
                    continue
                out.extend([piece] if len(piece) <= 4 else [piece[i : i + 2] for i in range(len(piece) - 1)])
        return out
    for part in _cut(clause.replace(" ", ""), boundaries, longest):
        runs = _script_runs(part)
        for i, (run, script) in enumerate(runs):
            if script not in ("han", "kana"):
                continue
            katakana = all(0x30A0 <= ord(c) <= 0x30FF or 0x31F0 <= ord(c) <= 0x31FF or 0xFF66 <= ord(c) <= 0xFF9F
                           for c in run)
            if script == "kana" and not katakana:
                continue  # hiragana: particles, endings, auxiliaries
            if script == "kana":
                if len(run) >= 2:
                    out.append(run)
                continue
            if len(run) == 1:
                nxt = runs[i + 1][0] if i + 1 < len(runs) else ""
                if nxt and not nxt.startswith(rules.particles):
                    continue  # a kanji stem with its okurigana: a verb or an adjective (見る, 高い)
            out.extend([run] if len(run) <= 6 else [run[j : j + 2] for j in range(len(run) - 1)])
    return out
