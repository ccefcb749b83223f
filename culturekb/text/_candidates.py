"""Candidate bookkeeping for the offline text extractor (`culturekb.text.concepts.TextConceptExtractor`): the
English word lists, clause and token splitting, and the per-sample scores of candidate concepts with what was
dropped and why. Private to the text layer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from culturekb._io import sha256_text
from culturekb.text.drops import Extraction
from culturekb.text.languages import instruction_words, word_list_sections, word_spans
from culturekb.text.names import Token
from culturekb.text.normalise import english_stopwords


@dataclass(frozen=True)
class WordLists:
    stop: frozenset[str]
    non_concepts: frozenset[str]
    emotion: frozenset[str]
    modifiers: frozenset[str]
    colours: frozenset[str]
    nouns: frozenset[str]
    placeholders: frozenset[str]
    known: frozenset[str]
    sha: str


EMOTION_SCHEMES = ("artemis9", "cedar14", "plutchik8")


@lru_cache(maxsize=1)
def english_word_lists() -> WordLists:
    """The packaged English word lists (text_concepts_en.txt, stopwords_en.txt), every emotion-scheme surface form,
    and the English words the name rules treat as known (the lists plus the packaged English emotion lexicon)."""
    from culturekb.kb.schemes import get_scheme

    text = resources.files("culturekb.data").joinpath(ENGLISH_FILE).read_text("utf-8")
    sections = {k: frozenset(v) for k, v in word_list_sections(ENGLISH_FILE).items()}
    emotion: set[str] = set(sections.get("emotion_words", frozenset()))
    for name in EMOTION_SCHEMES:  # emotion label sets only; a category scheme (ricevl14) names real concepts
        for form in get_scheme(name).surface_forms("en"):
            emotion.update(form.split())
    stop = english_stopwords()
    lexicon = json.loads(resources.files("culturekb.data").joinpath("lexicons/emoatlas_english.json")
                         .read_text("utf-8"))
    known = set(stop).union(*sections.values(), emotion, instruction_words("en"), lexicon)
    return WordLists(
        stop=stop,
        non_concepts=sections.get("non_concepts", frozenset()),
        emotion=frozenset(emotion),
        modifiers=sections.get("modifiers", frozenset()),
        colours=sections.get("colours", frozenset()),
        nouns=sections.get("nouns", frozenset()),
        placeholders=sections.get("placeholders", frozenset()),
        known=frozenset(known),
        sha=sha256_text(text + "\n".join(sorted(stop)) + "\n".join(sorted(emotion))),
    )


ENGLISH_FILE = "text_concepts_en.txt"
CLAUSE_SPLIT = re.compile(r"[.,;:!?()\[\]{}\"“”‘’…\n\t/|&]+|\s-\s|--")
# the same marks plus those of other scripts: Devanagari danda, Arabic comma and question mark, CJK punctuation
CLAUSE_SPLIT_ANY = re.compile(
    r"[.,;:!?()\[\]{}\"“”‘’«»…\n\t/|&।॥،؛؟。，、；：！？（）「」『』【】《》〈〉・¿¡]+|\s-\s|--"
)
TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
YEAR = re.compile(r"^\d+$")
ADJ_SUFFIXES = (
    ("ous", 4), ("ful", 6), ("ive", 7), ("able", 7), ("ible", 7), ("less", 6), ("ish", 6), ("est", 6), ("ness", 6)
)
VERB_SUFFIXES = (("ing", 5), ("ed", 5), ("ly", 5))
# laughter and drawn-out interjections: haha, jajaja, jeje, хаха, ахах, aaa, ммм
INTERJECTION = re.compile(r"^(?:([jh][aeiou])\1+[jh]?|(х[аеи]|ах)\2+х?|(.)\3{2,})$")


def title_text(title: str) -> str:
    """Readable title words: an ArtEmis/WikiArt slug `artist-name_title-words-1920` becomes `title words`."""
    t = title.strip()
    if t and not any(ch.isspace() for ch in t) and "_" in t:
        t = t.split("_", 1)[1]
    words = [w for w in re.split(r"[-_\s]+", t) if w and not YEAR.match(w)]
    return " ".join(words)


class Scores:
    """Candidate concepts of one sample: weighted counts, first positions, two-word phrases and their evidence,
    and the words dropped per reason."""

    def __init__(self) -> None:
        self.score: dict[str, float] = {}
        self.first: dict[str, int] = {}
        self.phrase_count: dict[str, int] = {}
        self.phrase_ok: dict[str, bool] = {}
        self.dropped: dict[str, dict[str, None]] = {}
        self.pos = 0

    def add(self, concept: str | None, weight: float) -> None:
        if concept is None:
            return
        self.score[concept] = self.score.get(concept, 0.0) + weight
        self.first.setdefault(concept, self.pos)

    def drop(self, reason: str | None, word: str | None) -> None:
        if reason is not None and word:
            self.dropped.setdefault(reason, {})[word] = None

    def phrase(self, phrase: str | None, weight: float, ok: bool) -> None:
        if phrase is None:
            return
        self.phrase_count[phrase] = self.phrase_count.get(phrase, 0) + 1
        if ok:
            self.phrase_ok[phrase] = True
        self.phrase_ok.setdefault(phrase, False)
        self.add(phrase, weight)

    def ranked(self, min_phrase_count: int, limit: int) -> list[str]:
        for phrase, ok in self.phrase_ok.items():
            if not ok and self.phrase_count[phrase] < min_phrase_count:
                del self.score[phrase]
        return sorted(self.score, key=lambda c: (-self.score[c], self.first[c], c))[:limit]

    def extraction(self, min_phrase_count: int, limit: int) -> Extraction:
        concepts = self.ranked(min_phrase_count, limit)
        kept = set(concepts)
        return Extraction(concepts, {r: [w for w in ws if w not in kept] for r, ws in self.dropped.items()
                                     if any(w not in kept for w in ws)})


@dataclass
class Context:
    """What the rules need to know about the sample a text belongs to."""

    artist: frozenset[str]
    lowercase: frozenset[str]


def tokens_of(text: str, english: bool) -> list[Token]:
    """The words of `text` (NFKC-normalised) in their own case; English drops a possessive 's and apostrophes."""
    if not english:
        return [Token(a, b, w, w.lower()) for a, b, w in word_spans(text)]
    out = []
    for m in TOKEN.finditer(text):
        word = m.group()
        word = word[:-2] if word.lower().endswith("'s") else word
        out.append(Token(m.start(), m.start() + len(word), word, word.lower().replace("'", "")))
    return out


def split_clauses(text: str, tokens: list[Token], split: re.Pattern[str]) -> list[list[int]]:
    """The token indices of each clause of `text` (clauses end at the marks of `split`)."""
    ends = [m.start() for m in split.finditer(text)]
    out: list[list[int]] = [[]]
    k = 0
    for i, tok in enumerate(tokens):
        while k < len(ends) and ends[k] < tok.start:
            k += 1
            if out[-1]:
                out.append([])
        out[-1].append(i)
    return [c for c in out if c]


