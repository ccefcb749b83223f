"""Languages of the text layer: word lists as data, scripts, tokenisation and CJK segmentation.

Every language the offline concept extractor reads has a data file `culturekb/data/languages/<code>.txt`
(English keeps `stopwords_en.txt` and `text_concepts_en.txt`); each file names its sources (see `NOTICE.md`
there). A file holds the language's stopwords, the words that are never concepts (the picture or text itself,
judgements, feelings), leading articles, and for Chinese and Japanese the characters and particles that the
dictionary-free segmentation uses. Emotion words come from the label vocabularies (`culturekb.kb.vocab`) and
the packaged emotion schemes, plus each file's `[emotion_words]` (inflected feeling words the label vocabularies
lack), so that a concept never names its own label. A file may also list `[function_words]` (adverbs, auxiliary
and modal forms, pronoun forms, interjections the stopword list lacks), `[function_phrases]` (multi-word function
expressions such as "no matter", dropped as a whole), `[name_particles]` and `[name_titles]` (for the name rules
of `culturekb.text.names`) and `[proper_concepts]` (capitalised words that are concepts, not people's names).
English keeps these sections in `text_concepts_en.txt`. Instruction words (the words of task instructions and
answer formats: answer, option, picture ...) have one file per language under `instructions/` with its source
and whether a native speaker checked it (`instruction_words`, `instruction_list`).

Tokenisation: space-separated languages are split into runs of letters, combining marks and digits (Python's
``\\w`` splits Devanagari and vowelled Arabic at their marks, so it is not used); Chinese and Japanese are cut
into word candidates by `culturekb.text.cjk`. A language without a file is a clear error (`language_rules`), or,
for text whose language is guessed, a one-time warning and no concepts from that text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from culturekb._io import sha256_text
from culturekb.errors import ConfigError, CultureKBError, DataError
from culturekb.text.normalise import english_stopwords
from culturekb.text.scripts import NGRAM_SCRIPTS, SCRIPT_LANGUAGE, dominant_script, script_of

__all__ = [
    "LanguageRules",
    "SCRIPT_LANGUAGE",
    "base_language",
    "culture_language",
    "dominant_script",
    "EmotionWords",
    "InstructionList",
    "emotion_words",
    "instruction_languages",
    "instruction_list",
    "instruction_words",
    "is_emotion_scheme",
    "is_emotion_word",
    "scheme_emotion_words",
    "scheme_label_forms",
    "language_rules",
    "script_of",
    "strip_suffixes",
    "supported_languages",
    "warn_unsupported",
    "word_list_sections",
    "word_spans",
    "word_tokens",
    "words_sha",
]

logger = logging.getLogger(__name__)

_DATA_DIR = "languages"
_ENGLISH_WORDS = "text_concepts_en.txt"
_INSTRUCTIONS_DIR = "languages/instructions"
_SEGMENTATIONS = ("spaces", "han", "japanese", "thai")

def base_language(code: str | None) -> str:
    """The primary language subtag of a code, lowercased: "zh-Hant" -> "zh", "pt_BR" -> "pt"; "" for None."""
    return (code or "").strip().lower().replace("_", "-").split("-")[0]


@lru_cache(maxsize=1)
def _token_pattern() -> re.Pattern[str]:
    """Runs of letters, combining marks and digits (all of Unicode's M categories added to ``[^\\W_]``)."""
    marks = "".join(chr(c) for c in range(0x0300, 0x10000) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me"))
    return re.compile(f"(?:[^\\W_]|[{re.escape(marks)}])+")


def word_tokens(text: str) -> list[str]:
    """The words of `text`, NFKC-normalised and lowercased: runs of letters, marks and digits."""
    return _token_pattern().findall(unicodedata.normalize("NFKC", text).lower())


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, word) for the words of `text` (already NFKC-normalised), in their own case."""
    return [(m.start(), m.end(), m.group()) for m in _token_pattern().finditer(text)]


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
    function_words: frozenset[str] = frozenset()
    function_phrases: tuple[tuple[str, ...], ...] = ()
    name_particles: frozenset[str] = frozenset()
    name_titles: frozenset[str] = frozenset()
    proper_concepts: frozenset[str] = frozenset()
    names_by_case: str = "no"
    lexicon: str = ""
    modifiers: frozenset[str] = frozenset()
    weak_chars: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    plural_suffixes: tuple[str, ...] = ()
    verb_endings: tuple[str, ...] = ()

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


@lru_cache(maxsize=16)
def word_list_sections(name: str) -> dict[str, list[str]]:
    """The sections of a packaged word list file (`name` relative to culturekb/data, e.g.
    "text_concepts_en.txt"): section -> entries, NFKC-normalised and lowercased, comments dropped."""
    text = _read(name)
    if text is None:
        raise DataError(f"culturekb/data/{name} is missing; reinstall culturekb")
    return _sections(text, f"culturekb/data/{name}")


@lru_cache(maxsize=64)
def language_rules(language: str) -> LanguageRules:
    """The word lists of `language` (a code such as "zh" or "pt-BR"); ConfigError for a language without any."""
    code = base_language(language)
    if code == "en":

        stop = english_stopwords()
        english = _read(_ENGLISH_WORDS) or ""
        sec = _sections(english, f"culturekb/data/{_ENGLISH_WORDS}")
        return LanguageRules("en", "English", "latin", "spaces", 3, stop, frozenset(sec.get("non_concepts", [])),
                             frozenset({"a", "an", "the"}), sha=sha256_text("\n".join(sorted(stop)) + english),
                             **_extra_rules(sec, names_by_case="yes"))
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
    stopwords = frozenset(sec.get("stopwords", []))
    if segmentation == "thai":
        from culturekb.text.thai import segmenter_stopwords, segmenter_version

        stopwords |= segmenter_stopwords()
        text += f"\n# segmenter {segmenter_version()}"
    return LanguageRules(
        code=code,
        name=settings.get("name", code),
        script=settings.get("script", "latin"),
        segmentation=segmentation,
        min_chars=min_chars,
        stopwords=stopwords,
        non_concepts=frozenset(sec.get("non_concepts", [])),
        articles=frozenset(sec.get("articles", [])),
        function_chars=frozenset(sec.get("function_chars", [])),
        particles=tuple(sec.get("particles", [])),
        locatives=tuple(sec.get("locatives", [])),
        trailing_verbs=tuple(sec.get("trailing_verbs", [])),
        sha=sha256_text(text),
        **_extra_rules(sec, names_by_case=_names_by_case(settings.get("names_by_case", "no"), where)),
        lexicon=settings.get("lexicon", ""),
    )


def _yes(value: str, where: str, key: str) -> bool:
    if value.lower() in ("yes", "true", "1"):
        return True
    if value.lower() in ("no", "false", "0"):
        return False
    raise DataError(f"{where}: {key} must be yes or no, got {value!r}")


def _names_by_case(value: str, where: str) -> str:
    if value not in ("yes", "no", "pairs"):
        raise DataError(f"{where}: names_by_case must be yes, no or pairs, got {value!r}")
    return value


def _extra_rules(sec: dict[str, list[str]], names_by_case: str) -> dict[str, Any]:
    """The optional sections every language file (and English's text_concepts_en.txt) may have."""
    return {
        "function_words": frozenset(sec.get("function_words", [])),
        "function_phrases": tuple(sorted({tuple(p.split()) for p in sec.get("function_phrases", []) if p.split()},
                                         key=lambda p: (-len(p), p))),
        "name_particles": frozenset(sec.get("name_particles", [])),
        "name_titles": frozenset(sec.get("name_titles", [])),
        "proper_concepts": frozenset(sec.get("proper_concepts", [])),
        "modifiers": frozenset(sec.get("modifiers", [])),
        "weak_chars": frozenset(sec.get("weak_chars", [])),
        "suffixes": tuple(sorted(set(sec.get("suffixes", [])), key=lambda x: (-len(x), x))),
        "plural_suffixes": tuple(sorted(set(sec.get("plural_suffixes", [])), key=lambda x: (-len(x), x))),
        "verb_endings": tuple(sorted(set(sec.get("verb_endings", [])), key=lambda x: (-len(x), x))),
        "names_by_case": names_by_case,
    }


def words_sha(languages: Iterable[str] | None = None) -> str:
    """One hash over the word lists (emotion and instruction words included) of `languages` (default: every
    supported language)."""
    langs = sorted(languages) if languages is not None else list(supported_languages())
    parts = []
    for lang in langs:
        exact, stems, endings = emotion_words(lang)
        parts += [lang, language_rules(lang).sha, *sorted(exact), *sorted(stems), *sorted(endings),
                  *sorted(instruction_words(lang))]
        if language_rules(lang).lexicon:
            from culturekb.text.lexicon import load_lexicon

            parts.append(load_lexicon(language_rules(lang).lexicon).sha)
    return sha256_text("\n".join(parts))


@dataclass(frozen=True)
class InstructionList:
    """One language's instruction words (`languages/instructions/<code>.txt`): the words of task instructions
    and answer formats (answer, option, choose, picture ...), never concepts; where they came from and whether a
    native speaker checked them."""

    language: str
    words: frozenset[str]
    source: str
    native_checked: bool


@lru_cache(maxsize=64)
def instruction_list(language: str) -> InstructionList | None:
    """The instruction words of `language`, or None for a language without a file."""
    code = base_language(language)
    where = f"culturekb/data/{_INSTRUCTIONS_DIR}/{code}.txt"
    text = _read(f"{_INSTRUCTIONS_DIR}/{code}.txt") if code else None
    if text is None:
        return None
    sec = _sections(text, where)
    settings = dict(line.partition("=")[::2] for line in sec.get("settings", []))
    settings = {k.strip(): v.strip() for k, v in settings.items()}
    if "source" not in settings or "native_checked" not in settings:
        raise DataError(f"{where}: [settings] must give 'source' and 'native_checked' (yes or no)")
    return InstructionList(code, frozenset(sec.get("instruction_words", [])), settings["source"],
                           _yes(settings["native_checked"], where, "native_checked"))


def instruction_languages() -> tuple[str, ...]:
    """The languages with an instruction word file."""
    folder = resources.files("culturekb.data").joinpath(_INSTRUCTIONS_DIR)
    return tuple(sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt")))


def instruction_words(language: str) -> frozenset[str]:
    """The instruction words of `language` (empty for a language without a file)."""
    found = instruction_list(language)
    return found.words if found is not None else frozenset()


_EMOTION_SCHEMES = ("artemis9", "cedar14", "plutchik8")


EmotionWords = tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]
"""(words, stems, endings): a word names an emotion when it is one of the words, starts with a stem or ends with
an ending."""


def _language_emotion_words(code: str) -> list[str]:
    """The `[emotion_words]` section of a language's word list file (English: text_concepts_en.txt)."""
    name = _ENGLISH_WORDS if code == "en" else f"{_DATA_DIR}/{code}.txt"
    text = _read(name) if code else None
    return _sections(text, f"culturekb/data/{name}").get("emotion_words", []) if text else []


@lru_cache(maxsize=64)
def emotion_words(language: str) -> EmotionWords:
    """(words, stems, endings) that name an emotion in `language`: the labels, synonyms, translations and label
    vocabulary words of the packaged emotion schemes, and the `[emotion_words]` of the language's word list file
    (a form ending in '*' is a stem, one starting with '*' an ending)."""
    from culturekb.kb.schemes import get_scheme

    code = base_language(language)
    forms: set[str] = set(_language_emotion_words(code))
    for name in _EMOTION_SCHEMES:  # emotion label sets only; a category scheme (ricevl14) names real concepts
        forms.update(scheme_label_forms(get_scheme(name), code))
    return _split_forms(forms)


def scheme_label_forms(scheme: Any, language: str) -> set[str]:
    """Every surface form of `scheme`'s labels in `language`: labels, synonyms, translations and the label
    vocabulary's words (stems and endings keep their '*')."""
    code = base_language(language)
    forms: set[str] = set(scheme.surface_forms(code))
    for words in scheme.vocabulary.get(code, {}).values():
        forms.update(words)
    return forms


def scheme_emotion_words(scheme: Any, language: str) -> EmotionWords:
    """(words, stems, endings) of an emotion scheme's labels in `language` (a user scheme such as BRIGHTER's
    `neutral`): what `emotion_words` gives for the packaged schemes, for any scheme. A scheme whose labels name
    no emotion concept of the label vocabularies (a category scheme such as ricevl14) gives nothing: its labels
    name real concepts."""
    if not is_emotion_scheme(scheme):
        return frozenset(), (), ()
    return _split_forms(scheme_label_forms(scheme, language))


@lru_cache(maxsize=64)
def _emotion_concepts() -> frozenset[str]:
    """The label-vocabulary concepts that the packaged emotion schemes' labels are tied to."""
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.vocab import match_concepts

    out: set[str] = set()
    for name in _EMOTION_SCHEMES:
        scheme = get_scheme(name)
        out.update(c for c, _ in match_concepts(scheme.labels, scheme.concepts).values())
    return frozenset(out)


def is_emotion_scheme(scheme: Any) -> bool:
    """Whether a scheme labels emotions: at least one of its labels is tied to an emotion concept of the label
    vocabularies (one that a packaged emotion scheme uses: joy, sadness, fear ...)."""
    from culturekb.kb.vocab import match_concepts

    tied = {c for c, _ in match_concepts(scheme.labels, scheme.concepts).values()}
    return bool(tied & _emotion_concepts())


def _split_forms(forms: Iterable[str]) -> EmotionWords:
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


def is_emotion_word(word: str, language: str, extra: EmotionWords | None = None) -> bool:
    """Whether `word` (lowercase) names an emotion in `language` (see `emotion_words`), or is one of `extra`'s
    (a scheme's, see `scheme_emotion_words`)."""
    for exact, stems, endings in (emotion_words(language), extra or (frozenset(), (), ())):
        if word in exact or word.startswith(stems) or (len(word) > 3 and word.endswith(endings)):
            return True
    return False


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


def warn_unsupported(language: str | None, script: str | None, culture_language: str | None = None) -> None:
    """Log once per (language, script) that texts in it give no concepts (or, in a script of `NGRAM_SCRIPTS`, only
    character n-grams): `language` is the language assumed for
    the script (None: no language is known for it), `culture_language` the sample culture's, named apart when it
    differs (a Korean text in a zh sample is no Chinese text without word lists)."""
    key = f"{language}:{script}"
    if key in _WARNED:
        return
    _WARNED.add(key)
    where = (f" (found in samples of a culture whose language is {culture_language!r})"
             if culture_language and culture_language != language else "")
    what = f"language {language!r}" if language else "any language"
    result = ("those texts give no text concepts" if script not in NGRAM_SCRIPTS else
              "those texts are read as character n-grams (pairs of letter clusters: pieces of words, not words; no "
              "stopword or emotion word is known for them)")
    logger.warning(
        "no word lists for %s written in the %s script%s: %s. Languages with word lists: %s. Add "
        "culturekb/data/languages/%s.txt, or use precomputed, 'vlm' or 'clip' concepts",
        what, script or "unknown", where, result, ", ".join(supported_languages()), language or "<code>",
    )


def strip_suffixes(word: str, rules: LanguageRules) -> str:
    """`word` without the particle the language attaches to it (`[suffixes]`, longest first; Korean 고양이가 ->
    고양이) and a plural marker before it (사람들에게 -> 사람), as long as at least two characters remain."""
    for suffixes in (rules.suffixes, rules.plural_suffixes):  # 사람들에게 -> 사람들 -> 사람
        for suffix in suffixes:
            if word.endswith(suffix) and len(word) - len(suffix) >= 2:
                word = word[: -len(suffix)]
                break
    return word
