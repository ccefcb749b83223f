"""Find label words in an answer, in any script, and tell asserted mentions from negated ones.

Used by `culturekb.inference.parsing`. The surface forms are the scheme's labels, synonyms and translations,
then its `vocabulary` (from the label vocabularies of `culturekb.kb.vocab`); the negation, contrast and
weak-word lists come from the same vocabulary files, per language.

Word boundaries per script:
- Latin, Cyrillic, Devanagari and other spaced scripts: a form must not touch another word character on either
  side, where vowel signs and other combining marks count as word characters (so "उदास" is not found inside
  "उदासी"); a stem form (`traurig*`) may run on to the end of its word, an ending form (`*sikitisha`) may
  start anywhere in its word (Swahili class and tense prefixes: inasikitisha, kinasikitisha).
- Han, kana, Thai, Lao, Khmer, Myanmar (written without spaces): a form matches anywhere.
- Hangul and Ethiopic: a form must start a word (an Amharic clitic prefix such as በ/ለ/የ/ከ is allowed) and may
  run on, since particles and suffixes attach to the word (슬픔이, ሀዘንን).
- Arabic: clitic prefixes (و, ف, ب, ل, ك, ال) and common suffixes are allowed around the form.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

from culturekb.kb.schemes import EmotionScheme
from culturekb.kb.vocab import LanguageVocabulary, load_vocabulary, vocabulary_languages

__all__ = ["AMBIGUOUS_FORMS", "LabelMatcher", "Mention", "label_matcher", "normalise_text"]

AMBIGUOUS_FORMS = frozenset(
    {"other", "others", "none", "neutral", "content", "mad", "wonder", "其他", "别的", "آخر", "اخر", "أخرى", "اخرى"}
)
"""Surface forms that double as everyday words ("the content of", "unlike other paintings", "另一个/其他"):
in free text they count only when no other label is mentioned. An exact JSON value or answer line still maps.
Each vocabulary file adds its own (`weak`)."""

_MARKS = "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0900-\u0963" \
    "\u0966-\u0dff" \
    "\u135d-\u135f\u1ab0-\u1aff\u1dc0-\u1dff\u200c\u200d\u20d0-\u20ff\ufe20-\ufe2f"
_W = rf"[\w{_MARKS}]"
"""A word character: letters, digits and combining marks (Indic vowel signs and viramas included; the
Devanagari danda and double danda are punctuation)."""

_AR = "\u0621-\u064a\u066e-\u06d3"
_NOSPACE = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_ETHIOPIC = "\u1200-\u139f\u2d80-\u2ddf"
_SCRIPT = (
    ("nospace", re.compile(f"[{_NOSPACE}]")),
    ("hangul", re.compile(f"[{_HANGUL}]")),
    ("arabic", re.compile(f"[{_AR}]")),
    ("ethiopic", re.compile(f"[{_ETHIOPIC}]")),
)
_CLASS_ORDER = ("word", "arabic", "ethiopic", "hangul", "nospace")
_CLAUSE_PUNCT = re.compile(r"[.!?;:,()\[\]。！？；：，、،؛।॥።፣፤\n]")
_AR_DIACRITICS = re.compile(r"[\u0610-\u061a\u064b-\u065f\u0670\u0640]")
_ETHIOPIC_HOMOPHONES = {0x1210: 0x1200, 0x1280: 0x1200, 0x1220: 0x1230, 0x12D0: 0x12A0, 0x1340: 0x1338}
_ETHIOPIC_TABLE = {
    src + k: dst + k for src, dst in _ETHIOPIC_HOMOPHONES.items() for k in range(8) if not (src == 0x1280 and k == 7)
}
_LETTER_TABLE = str.maketrans({"’": "'", "‘": "'", "أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه",
                               "\u093c": None, "\u0307": None, **{chr(a): chr(b) for a, b in _ETHIOPIC_TABLE.items()}})


def normalise_text(text: str) -> str:
    """The comparison form of answers and label words alike: NFKC, lower case, Arabic diacritics, tatweel and
    letter variants (alef, alef maqsura, ta marbuta) unified, Devanagari nukta and a lone combining dot above
    (Turkish "İ".lower()) dropped, Amharic homophone
    letters (ሐ/ኀ -> ሀ, ሠ -> ሰ, ዐ -> አ, ፀ -> ጸ) unified. Keeps the length of most texts, not all."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _AR_DIACRITICS.sub("", text)
    return text.translate(_LETTER_TABLE)


def _script(form: str) -> str:
    for ch in form:
        if ch.isalpha():
            for name, pattern in _SCRIPT:
                if pattern.match(ch):
                    return name
            return "word"
    return "word"


# -- regex tries ----------------------------------------------------------------------------------------------

_SEP = r"[\s_\-]+"


def _trie_regex(forms: list[str]) -> str:
    """One regex matching any of `forms`, longest first at each position (a prefix tree, not an alternation of
    thousands of words, so that matching stays fast); a space in a form matches any run of separators."""
    trie: dict[str, dict] = {}
    for form in forms:
        node = trie
        for ch in form:
            node = node.setdefault(ch, {})
        node[""] = {}

    def walk(node: dict[str, dict]) -> str:
        branches = [(_SEP if ch == " " else re.escape(ch)) + walk(child) for ch, child in node.items() if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return walk(trie)


def _class_regex(script: str, exact: list[str], stems: list[str], endings: list[str]) -> str:
    parts = []
    if script == "nospace" or script == "hangul" or script == "ethiopic":
        core = _trie_regex(sorted(set(exact) | set(stems) | set(endings)))
        if script == "hangul":
            return f"(?<![{_HANGUL}])(?P<f_{script}>{core})"
        if script == "ethiopic":
            return f"(?<![{_ETHIOPIC}])(?:ስለ|እንደ|[በለየከእ])??(?P<f_{script}>{core})"  # a clitic only if needed
        return f"(?P<f_{script}>{core})"
    if script == "arabic":
        before = f"(?<![{_AR}])(?:[وفبلك]?ال|لل|[وفبلك])??"  # a clitic only if the form does not start there
        after = f"(?:ات|ين|ون|ها|هم|ا|ه|ي)?(?![{_AR}])"
        if exact:
            parts.append(f"{before}(?P<f_arabic>{_trie_regex(exact)}){after}")
        if stems:
            parts.append(f"{before}(?P<s_arabic>{_trie_regex(stems)})[{_AR}]*")
        return "|".join(parts)
    if exact:
        parts.append(rf"(?<!{_W})(?P<f_word>{_trie_regex(exact)})(?!{_W})")
    if stems:
        parts.append(rf"(?<!{_W})(?P<s_word>{_trie_regex(stems)}){_W}*")
    if endings:  # a word ending in the form: Bantu class and tense prefixes (inasikitisha, linatisha)
        parts.append(rf"(?<!{_W}){_W}*?(?P<e_word>{_trie_regex(endings)})(?!{_W})")
    return "|".join(parts)


# -- negation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _NegationCheck:
    spaced: bool
    window: int
    before: re.Pattern[str] | None
    after: re.Pattern[str] | None
    blank: re.Pattern[str] | None
    contrast: re.Pattern[str] | None


def _word_alternation(words: list[str], spaced: bool) -> str:
    parts = []
    for w in sorted({normalise_text(x) for x in words}, key=len, reverse=True):
        left_open, right_open = w.startswith("*"), w.endswith("*")
        core = re.escape(w.strip("*")).replace(r"\ ", _SEP)
        if spaced:
            core = ("" if left_open else rf"(?<!{_W})") + core + ("" if right_open else rf"(?!{_W})")
        parts.append(core)
    return "|".join(parts)


@cache
def _negation_check(language: str) -> _NegationCheck:
    vocab = load_vocabulary(language)
    rules = vocab.negation
    negators = [normalise_text(n).strip("*") for n in (*rules.before, *rules.after)]
    # vocabulary words that contain a negator ("不安", "恥ずかし", "غير ذلك") are blanked out of the window
    inner = [
        form.rstrip("*") for words in vocab.forms.values() for form in map(normalise_text, words)
        if any(n and _contains(form, n, vocab.spaced) for n in negators)
    ]
    blank = _word_alternation([*rules.exceptions, *inner], vocab.spaced)
    return _NegationCheck(
        spaced=vocab.spaced,
        window=rules.window,
        before=re.compile(_word_alternation(list(rules.before), vocab.spaced)) if rules.before else None,
        after=re.compile(_word_alternation(list(rules.after), vocab.spaced)) if rules.after else None,
        blank=re.compile(blank) if blank else None,
        contrast=re.compile(_word_alternation(list(vocab.contrast), True)) if vocab.contrast else None,
    )


def _contains(form: str, negator: str, spaced: bool) -> bool:
    if not spaced:
        return negator in form
    return re.search(rf"(?<!{_W}){re.escape(negator)}(?!{_W})", form) is not None


def _blanked(segment: str, check: _NegationCheck) -> str:
    if check.blank is None:
        return segment
    return check.blank.sub(lambda m: "_" * len(m.group(0)), segment)


def _clause_before(text: str, start: int, checks: list[_NegationCheck]) -> str:
    window = text[max(0, start - 80) : start]
    cut = 0
    for m in _CLAUSE_PUNCT.finditer(window):
        cut = m.end()
    for check in checks:
        if check.contrast is not None:
            for m in check.contrast.finditer(window):
                cut = max(cut, m.end())
    return window[cut:]


def _clause_after(text: str, end: int, checks: list[_NegationCheck]) -> str:
    window = text[end : end + 80]
    cut = len(window)
    m = _CLAUSE_PUNCT.search(window)
    if m is not None:
        cut = m.start()
    for check in checks:
        if check.contrast is not None:
            c = check.contrast.search(window)
            if c is not None:
                cut = min(cut, c.start())
    return window[:cut]


def _negated(text: str, start: int, end: int, languages: tuple[str, ...]) -> bool:
    """Whether the mention at text[start:end] is negated in its clause, by the rules of any of `languages`."""
    checks = [_negation_check(lang) for lang in languages]
    before = _clause_before(text, start, checks)
    after = None
    for check in checks:
        if check.before is not None:
            seg = _blanked(before, check)
            tail = " ".join(seg.split()[-check.window :]) if check.spaced else seg[-check.window :]
            if check.before.search(tail):
                return True
        if check.after is not None:
            if after is None:
                after = _clause_after(text, end, checks)
            seg = _blanked(after, check)
            head = " ".join(seg.split()[: check.window]) if check.spaced else seg[: check.window]
            if check.after.search(head):
                return True
    return False


# -- the matcher ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    """One label word found in an answer: where, which label, whether weak or negated, in which languages."""

    start: int
    end: int
    label: str
    weak: bool
    negated: bool


@dataclass(frozen=True)
class LabelMatcher:
    """The compiled surface forms of one scheme for one set of languages."""

    pattern: re.Pattern[str] | None
    exact: dict[str, tuple[str, tuple[str, ...]]]  # normalised form -> (label, languages)
    stems: dict[str, tuple[str, tuple[str, ...]]]  # normalised stem (no '*') -> (label, languages)
    endings: dict[str, tuple[str, tuple[str, ...]]]  # normalised word ending (form '*ending') -> (label, languages)
    weak: frozenset[str]
    answer_language: str | None

    def lookup(self, text: str) -> str | None:
        """The label whose form is exactly `text` (or whose stem starts the single word `text`)."""
        key = re.sub(_SEP, " ", normalise_text(text)).strip()
        hit = self.exact.get(key)
        if hit is not None:
            return hit[0]
        if key and " " not in key:
            for end in range(len(key), 0, -1):
                stem = self.stems.get(key[:end])
                if stem is not None:
                    return stem[0]
            for start in range(len(key)):
                ending = self.endings.get(key[start:])
                if ending is not None:
                    return ending[0]
        return None

    def mentions(self, text: str) -> list[Mention]:
        """Every mention in `text` (already normalised with `normalise_text`), in reading order."""
        if self.pattern is None:
            return []
        out = []
        for m in self.pattern.finditer(text):
            group = m.lastgroup
            if group is None:
                continue
            found = re.sub(_SEP, " ", m.group(group))
            table = {"s": self.stems, "e": self.endings}.get(group[0], self.exact)
            hit = table.get(found)
            if hit is None and group.startswith("f_"):  # a stem inside a no-space script
                hit = self.stems.get(found) or self.endings.get(found)
            if hit is None:
                continue
            label, languages = hit
            extra = (self.answer_language,) if self.answer_language and self.answer_language not in languages else ()
            langs = tuple(lang for lang in (*languages, *extra) if lang in vocabulary_languages())
            key = {"s": found + "*", "e": "*" + found}.get(group[0], found)
            out.append(Mention(m.start(), m.end(), label, key in self.weak or found in self.weak,
                               _negated(text, m.start(), m.end(), langs)))
        return out


@cache
def _weak_forms() -> frozenset[str]:
    forms = {normalise_text(f) for f in AMBIGUOUS_FORMS}
    for lang in vocabulary_languages():
        forms.update(normalise_text(w) for w in load_vocabulary(lang).weak)
    return frozenset(forms)


_MATCHERS: dict[tuple[int, str | None, bool], tuple[EmotionScheme, LabelMatcher]] = {}
_MATCHERS_MAX = 64


def label_matcher(scheme: EmotionScheme, language: str | None, every_language: bool) -> LabelMatcher:
    """The matcher of `scheme` for the answer `language`: its labels, English synonyms and that language's
    translations, or every language's with `every_language` (schemes are unhashable: cached by identity)."""
    key = (id(scheme), language, every_language)
    hit = _MATCHERS.get(key)
    if hit is not None and hit[0] is scheme:
        return hit[1]
    built = _build(scheme, language, every_language)
    if len(_MATCHERS) >= _MATCHERS_MAX:
        _MATCHERS.pop(next(iter(_MATCHERS)))
    _MATCHERS[key] = (scheme, built)
    return built


def _build(scheme: EmotionScheme, language: str | None, every_language: bool) -> LabelMatcher:
    entries: list[tuple[str, str, str]] = [(lab, lab, "en") for lab in scheme.labels]
    entries += [(s, lab, "en") for lab, syns in scheme.synonyms.items() for s in syns]
    for tables in (scheme.translations, scheme.vocabulary):
        for lang, table in tables.items():
            if every_language or lang in (language, "en"):
                entries += [(w, lab, lang) for lab, words in table.items() for w in words]
    exact: dict[str, tuple[str, list[str]]] = {}
    stems: dict[str, tuple[str, list[str]]] = {}
    endings: dict[str, tuple[str, list[str]]] = {}
    by_class: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for form, label, lang in entries:
        norm = re.sub(_SEP, " ", normalise_text(form)).strip()
        kind = 2 if norm.startswith("*") else 1 if norm.endswith("*") else 0
        norm = norm.strip("*").strip()
        if not norm:
            continue
        if every_language and language is not None and lang not in (language, "en") and len(norm) < 4 \
                and _script(norm) == "word":
            continue  # a short word of another language is too often an everyday word of this one ("ira", "fe")
        into = (exact, stems, endings)[kind]
        known = into.get(norm)
        if known is not None:
            if known[0] == label and lang not in known[1]:
                known[1].append(lang)
            continue
        into[norm] = (label, [lang])
        by_class.setdefault(_script(norm), ([], [], []))[kind].append(norm)
    parts = [_class_regex(c, *by_class[c]) for c in _CLASS_ORDER if c in by_class]
    pattern = re.compile("|".join(p for p in parts if p)) if parts else None
    return LabelMatcher(
        pattern=pattern,
        exact={k: (lab, tuple(langs)) for k, (lab, langs) in exact.items()},
        stems={k: (lab, tuple(langs)) for k, (lab, langs) in stems.items()},
        endings={k: (lab, tuple(langs)) for k, (lab, langs) in endings.items()},
        weak=_weak_forms(),
        answer_language=language if language in vocabulary_languages() else None,
    )


def vocabulary(language: str | None) -> LanguageVocabulary | None:
    """The vocabulary of `language`, or None when none is shipped."""
    if language is None or language not in vocabulary_languages():
        return None
    return load_vocabulary(language)
