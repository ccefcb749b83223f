"""Concept normalisation (paper step 1): one surface form per concept before counting.

English: Unicode NFKC, lowercase, possessive and punctuation removal, leading articles and determiners dropped,
the last word singularised ("The Red Dresses" -> "red dress"). Languages written without spaces (Chinese,
Japanese, Korean) lose all whitespace and punctuation; other languages (Arabic, Spanish ...) lose punctuation and
repeated whitespace only; Arabic also loses its short-vowel marks and tatweel, and a conjunction or preposition
fused with the article becomes the article alone ("والقمر", "بالقمر" -> "القمر"). The English rules apply to
Latin-script text only: a concept in another script under language "en" (a query typed in Hindi, a Chinese KB
concept reopened with the English default) is normalised by the rules of its script's language. `None` means
"not a concept": empty, only stopwords or digits, or longer than `MAX_CONCEPT_CHARS` characters.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

from culturekb.text.scripts import SCRIPT_LANGUAGE, dominant_script, script_of

__all__ = ["normalise_concept", "singularise", "english_stopwords", "MAX_CONCEPT_CHARS"]

MAX_CONCEPT_CHARS = 64

_NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "ko", "th", "lo", "km", "my"})
_NO_SPACE_SCRIPTS = frozenset({"han", "kana"})
_ARABIC_MARKS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_ARABIC_FUSED_ARTICLE = ("وال", "بال", "كال", "فال")
_LEADING_DETERMINERS = frozenset(
    {"a", "an", "the", "this", "that", "these", "those", "some", "his", "her", "their", "its", "my", "our", "your"}
)

# Irregular plurals and plurals that the suffix rules below get wrong.
_IRREGULAR: dict[str, str] = {
    "children": "child", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth", "geese": "goose",
    "mice": "mouse", "lice": "louse", "oxen": "ox", "dice": "die", "leaves": "leaf", "wolves": "wolf",
    "knives": "knife", "wives": "wife", "lives": "life", "shelves": "shelf", "calves": "calf", "halves": "half",
    "loaves": "loaf", "thieves": "thief", "elves": "elf", "scarves": "scarf", "hooves": "hoof",
    "wharves": "wharf", "selves": "self", "sheaves": "sheaf", "cacti": "cactus", "fungi": "fungus",
    "nuclei": "nucleus", "alumni": "alumnus", "criteria": "criterion", "phenomena": "phenomenon",
    "movies": "movie", "cookies": "cookie", "pies": "pie", "ties": "tie", "lies": "lie", "zombies": "zombie",
    "brownies": "brownie", "hippies": "hippie", "calories": "calorie", "prairies": "prairie",
    "shoes": "shoe", "toes": "toe", "canoes": "canoe", "hoes": "hoe", "oboes": "oboe", "horseshoes": "horseshoe",
    "buses": "bus", "gases": "gas", "lenses": "lens", "atlases": "atlas", "canvases": "canvas",
    "irises": "iris", "octopuses": "octopus", "cactuses": "cactus", "circuses": "circus", "viruses": "virus",
    "menus": "menu", "emus": "emu", "gnus": "gnu", "tutus": "tutu", "haikus": "haiku",
    "axes": "axe", "crises": "crisis", "analyses": "analysis", "oases": "oasis", "theses": "thesis",
    "bases": "base", "vases": "vase", "cases": "case", "houses": "house", "horses": "horse", "roses": "rose",
    "caves": "cave", "waves": "wave", "doves": "dove", "groves": "grove", "olives": "olive", "gloves": "glove",
    "stoves": "stove", "graves": "grave", "slaves": "slave", "sleeves": "sleeve", "valves": "valve",
    "curves": "curve", "nerves": "nerve", "eaves": "eave", "coves": "cove", "knaves": "knave",
    "niches": "niche", "cliches": "cliche", "caches": "cache", "moustaches": "moustache",
    "mustaches": "mustache", "avalanches": "avalanche", "headaches": "headache", "aches": "ache",
    "quizzes": "quiz", "fezzes": "fez",
}

# Words that end like a plural but are not one (or whose plural is the same word).
_INVARIANT = frozenset(
    {
        "people", "sheep", "deer", "fish", "moose", "swine", "bison", "aircraft", "series", "species", "news",
        "clothes", "pants", "trousers", "scissors", "jeans", "shorts", "pyjamas", "pajamas", "tongs",
        "headquarters", "means", "physics", "mathematics", "ethics", "politics", "economics", "athletics",
        "canvas", "atlas", "gas", "bias", "christmas", "texas", "alias", "pegasus", "lens", "chaos", "cosmos",
        "mars", "venus", "jesus", "paris", "athens", "thames", "moses", "zeus", "hermes", "achilles", "hercules",
        "perseus", "narcissus", "dionysus", "bacchus", "judas", "thomas", "nicholas", "lucas", "james", "charles",
        "this", "his", "is", "was", "has", "does", "yes", "us", "thus", "always", "perhaps", "across",
        "famous", "various", "glamorous", "nervous", "towards", "afterwards", "upwards", "downwards",
        "its", "hers", "ours", "yours", "theirs", "less", "unless", "whereas", "besides", "sometimes",
    }
)

_NOT_MEN_PLURALS = frozenset({"omen", "amen", "semen", "stamen", "specimen", "abdomen", "regimen", "hymen", "yemen"})

# Suffix rules, tried in order: (plural suffix, replacement, minimum word length for the rule to apply).
_SUFFIX_RULES: tuple[tuple[str, str, int], ...] = (
    ("sses", "ss", 5),   # glasses -> glass, dresses -> dress
    ("ches", "ch", 5),   # churches -> church
    ("shes", "sh", 5),   # bushes -> bush
    ("xes", "x", 4),     # boxes -> box
    ("zzes", "zz", 5),   # buzzes -> buzz
    ("oes", "o", 5),     # tomatoes -> tomato, heroes -> hero
    ("ies", "y", 5),     # berries -> berry, skies -> sky
)
_KEEP_ENDINGS = ("ss", "us", "is", "ics")


def singularise(word: str) -> str:
    """The singular of one lowercase English word, by a small rule set plus an exceptions list."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("men") and len(word) > 4 and word not in _NOT_MEN_PLURALS:
        return word[:-3] + "man"  # gentlemen -> gentleman, fishermen -> fisherman
    if word in _INVARIANT or len(word) <= 3 or not word.endswith("s") or not word.isalpha():
        return word
    if word.endswith(_KEEP_ENDINGS):
        return word
    for suffix, repl, min_len in _SUFFIX_RULES:
        if word.endswith(suffix) and len(word) >= min_len:
            return word[: -len(suffix)] + repl
    return word[:-1]


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """The packaged English stopword list (culturekb/data/stopwords_en.txt)."""
    text = resources.files("culturekb.data").joinpath("stopwords_en.txt").read_text("utf-8")
    return frozenset(ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))


_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b")
_APOSTROPHE = re.compile(r"['\u2019`]")
_NON_WORD = re.compile(r"[^\w\s]|_")
_SPACES = re.compile(r"\s+")


def _strip_punctuation(text: str) -> str:
    """Replace every punctuation or symbol character by a space (keeps letters, marks and digits)."""
    return "".join(" " if unicodedata.category(ch)[0] in "PSZC" and not ch.isspace() else ch for ch in text)


def _arabic(text: str) -> str:
    """Arabic without short-vowel marks and tatweel; "و/ب/ك/ف + ال" and "لل" at a word start become "ال"."""
    words = []
    for w in _ARABIC_MARKS.sub("", text).split():
        if w.startswith(_ARABIC_FUSED_ARTICLE) and len(w) >= 6:
            w = w[1:]
        elif w.startswith("لل") and len(w) >= 5:
            w = "ال" + w[2:]
        words.append(w)
    return " ".join(words)


def _non_latin_language(text: str) -> str | None:
    """For text with letters outside the Latin script: the language of its main script (None otherwise)."""
    if all(script_of(ch) in (None, "latin") for ch in text):
        return None
    script = dominant_script(text)
    return SCRIPT_LANGUAGE.get(script or "", "und") if script != "latin" else None


def normalise_concept(text: str, language: str = "en") -> str | None:
    """The normalised form of a concept, or None if `text` is not a usable concept.

    `language` is a language code (`en`, `zh`, `ar` ...); English rules apply to Latin-script text under `en`
    only (text in another script is normalised by the rules of that script's language).
    """
    if not isinstance(text, str):
        return None
    lang = (language or "en").strip().lower().split("-")[0].split("_")[0]
    s = unicodedata.normalize("NFKC", text).lower().strip()
    if lang == "en":
        lang = _non_latin_language(s) or "en"
    if lang != "en":
        s = _SPACES.sub(" ", _strip_punctuation(s)).strip()
        if lang == "ar":
            s = _arabic(s)
        if lang in _NO_SPACE_LANGUAGES or _no_space_script(s):
            s = s.replace(" ", "")
        if not s or s.isdigit() or len(s) > MAX_CONCEPT_CHARS:
            return None
        return s
    s = _POSSESSIVE.sub("", s)
    s = _APOSTROPHE.sub("", s)
    s = _NON_WORD.sub(" ", s)
    tokens = s.split()
    while tokens and tokens[0] in _LEADING_DETERMINERS:
        tokens.pop(0)
    stop = english_stopwords()
    if not tokens or all(t in stop or t.isdigit() for t in tokens):
        return None
    tokens[-1] = singularise(tokens[-1])
    out = " ".join(tokens)
    if len(out) > MAX_CONCEPT_CHARS:
        return None
    return out


def _no_space_script(text: str) -> bool:
    """Whether `text` is mostly Chinese or Japanese (spaces inside it are then no word breaks)."""
    return dominant_script(text) in _NO_SPACE_SCRIPTS
