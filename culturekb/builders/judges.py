"""Reverse validation judges (paper step 4): infer the emotion from the rationales alone.

- `LexiconJudge` (offline): counts NRC Emotion Lexicon words (Plutchik-8) and the target scheme's own emotion
  words in the rationales.
- `PrototypeJudge` (offline): nearest label prototype in sentence-embedding space.
- `LLMJudge` (`culturekb.builders.llm_judge`, re-exported here): any chat model through a `ModelClient`, answering
  in JSON.

A verdict `agrees` when the inferred label equals the tuple's dominant emotion; a judge that finds no evidence
returns label None and `agrees=False` (the "no-evidence" state of `culturekb.builders.validation.verdict_state`),
so the tuple is flagged for review rather than silently accepted, and the build report counts it apart from the
tuples a judge contradicted.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from culturekb import registry
from culturekb._io import stable_hash
from culturekb.builders._emolex import TRANSLATED_LEXICONS, lexicon_hits
from culturekb.builders.base import Judge, JudgeInput
from culturekb.builders.llm_judge import LLMJudge
from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import JudgeVerdict
from culturekb.kb.schemes import EmotionScheme, get_scheme, map_distribution
from culturekb.models.base import Embedder
from culturekb.text.normalise import english_stopwords, singularise

__all__ = [
    "LexiconJudge",
    "PrototypeJudge",
    "LLMJudge",
    "make_judge",
    "prototype_judge",
    "culture_language",
    "DIRECT_HIT_WEIGHT",
]

logger = logging.getLogger(__name__)

DIRECT_HIT_WEIGHT = 2.0
"""Weight of one occurrence of a target-scheme label, synonym or translation (a lexicon word weighs 1)."""

_LEXICON_FILES = {"en": "emoatlas_english.json", "zh": "emoatlas_chinese.json"}
_NEGATORS_EN = frozenset({"not", "no", "never", "without", "hardly", "nor", "isnt", "arent", "wasnt", "dont",
                          "doesnt", "didnt", "cannot", "cant", "wont", "neither", "nothing", "lack", "lacks"})
_NEGATORS_ZH = ("不", "没", "没有", "无", "非", "毫无", "并不", "别")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_EN_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def culture_language(culture: str) -> str:
    """The prompt/lexicon language of a culture in the registry ("zh" -> "zh", "SG" -> "en"); a culture the registry
    lacks whose id is a language code with word lists ("de") is that language; anything else is a ConfigError."""
    from culturekb.kb.cultures import default_registry
    from culturekb.text.languages import base_language, supported_languages

    try:
        return default_registry().resolve(culture).language
    except ConfigError:
        if base_language(culture) in supported_languages():
            return base_language(culture)
        raise


def _verdict_none(judge: str, detail: str, scores: dict[str, float] | None = None) -> JudgeVerdict:
    return JudgeVerdict(judge=judge, label=None, agrees=False, scores=scores or {}, detail=detail)


def _argmax(scores: dict[str, float], scheme: EmotionScheme, secondary: dict[str, float] | None = None) -> str:
    """Highest score; ties -> higher `secondary` score, then the label that comes first in the scheme."""
    secondary = secondary or {}
    best = max(scheme.labels, key=lambda lab: (scores.get(lab, 0.0), secondary.get(lab, 0.0), -scheme.index(lab)))
    return best


# ----------------------------------------------------------------------------------------------------------
# lexicon
# ----------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _lexicon(language: str) -> dict[str, tuple[str, ...]]:
    """The packaged Plutchik-8 lexicon of `language` ("en" or "zh") as word -> emotions."""
    name = _LEXICON_FILES[language]
    raw = json.loads(resources.files("culturekb.data").joinpath(f"lexicons/{name}").read_text("utf-8"))
    if not isinstance(raw, dict):
        raise DataError(f"culturekb/data/lexicons/{name}: expected a JSON object word -> [emotions]")
    plutchik = set(get_scheme("plutchik8").labels)
    out: dict[str, tuple[str, ...]] = {}
    for word, emotions in raw.items():
        emos = tuple(e for e in emotions if e in plutchik)
        if emos:
            out[unicodedata.normalize("NFKC", word).lower()] = emos
    return out


def _en_variants(token: str) -> list[str]:
    """The token and a few inflection-stripped forms, tried in order against the lexicon."""
    out = [token, singularise(token)]
    for suffix, repl in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("ly", ""), ("ness", ""),
                         ("iness", "y"), ("ily", "y")):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            out.append(token[: -len(suffix)] + repl)
    return out


class LexiconJudge:
    """Infers the emotion by counting emotion words in the rationales (offline).

    Evidence per item, computed from all its rationales together:

    1. NRC Emotion Lexicon (Plutchik-8) words: each word occurrence adds one unit, split evenly over the
       emotions the lexicon lists for it; the Plutchik-8 counts are then mapped onto the target scheme through the
       scheme file's explicit mapping (`map_distribution`, plutchik8 -> artemis9 / cedar14).
    2. Direct hits: each occurrence of a target label, synonym or translation (in the item's language) adds
       `DIRECT_HIT_WEIGHT` (2.0) to that label, because naming the emotion is stronger evidence than an
       associated word. Forms that are stopwords ("other", "none") are not counted.

    Outside English the target forms include the label vocabulary of the item's language (the scheme's
    `vocabulary`: "traurig", "грусть", "उदास" ...; a stem such as "traurig*" matches its inflections), so a
    scheme without its own translations, a user's label set, still finds its labels in any language.

    A word right after a negation ("not sad", "不悲伤", "nicht traurig": the vocabulary's negators) counts
    nothing. Tokenising: English by words (with light inflection stripping for lexicon look-up); other
    space-separated languages by words of letters and marks (`culturekb.text.languages.word_tokens`); Chinese
    and Japanese by greedy longest match over the lexicon words and the scheme's forms. The language of each item
    comes from its culture (`language_of`, default: the packaged culture registry); "zh" uses the Chinese
    lexicon; German, Spanish and Russian their EmoLex translations (NRC's, `culturekb.builders._emolex`: words as
    written or by a crude stem, multi-word entries) plus the English one for English words in the text; Japanese
    none; every other language the English one. The predicted label is the argmax of the
    total; ties go to the label with more direct-hit evidence, then to the label listed first in the scheme. No
    evidence at all gives label None, agrees False, detail "no lexicon evidence".
    """

    def __init__(
        self,
        scheme: EmotionScheme | str,
        language: str | None = None,
        language_of: Callable[[str], str] | None = None,
        direct_weight: float = DIRECT_HIT_WEIGHT,
    ) -> None:
        self.scheme = get_scheme(scheme)
        self.plutchik = get_scheme("plutchik8")
        self.language = language
        self.language_of = language_of or culture_language
        self.direct_weight = float(direct_weight)
        if self.scheme.name != self.plutchik.name and self.scheme.name not in self.plutchik.mappings:
            logger.warning(
                "LexiconJudge: no plutchik8 -> %s mapping in the scheme files; only the scheme's own label words "
                "count as evidence. Add a mapping under 'mappings' in plutchik8.json to use the lexicon.",
                self.scheme.name,
            )
        lang_part = language or "by-culture"
        self.id = (f"lexicon:emolex+{'+'.join(sorted(TRANSLATED_LEXICONS))}:{self.scheme.name}:{lang_part}"
                   f":dw{self.direct_weight:g}")

    def _lang(self, item: JudgeInput) -> str:
        lang = self.language or self.language_of(item.culture)
        return "zh" if lang.lower().startswith("zh") else lang.lower()

    def _forms(self, lang: str) -> dict[str, str]:
        stop = english_stopwords()
        forms = {f: lab for f, lab in self.scheme.surface_forms(lang).items() if f not in stop}
        if lang != "en":
            for lab, words in self.scheme.vocabulary.get(lang, {}).items():
                for w in words:
                    w = unicodedata.normalize("NFKC", w).lower().strip()
                    if w and "*" not in w:
                        forms.setdefault(w, lab)
        return forms

    def _affixes(self, lang: str) -> list[tuple[str, str, bool]]:
        """(stem or ending, label, is_stem) of the vocabulary forms marked with '*' in `lang`."""
        out: list[tuple[str, str, bool]] = []
        for lab, words in self.scheme.vocabulary.get(lang, {}).items():
            for w in words:
                w = unicodedata.normalize("NFKC", w).lower().strip()
                if w.endswith("*") and len(w) > 2:
                    out.append((w[:-1], lab, True))
                elif w.startswith("*") and len(w) > 2:
                    out.append((w[1:], lab, False))
        return out

    def _evidence_spaced(self, text: str, forms: dict[str, str], lang: str
                         ) -> tuple[dict[str, float], dict[str, float], list[str]]:
        """Direct hits of the scheme's forms in a space-separated language other than English, and the words of the
        language's EmoLex translation where one is packaged (de, es, ru: `culturekb.builders._emolex`)."""
        from culturekb.text.languages import word_tokens

        negators, window = _negators(lang)
        affixes = self._affixes(lang)
        direct: dict[str, float] = {}
        hits: list[str] = []
        tokens = word_tokens(text)
        joined = " ".join(tokens)
        consumed: set[int] = set()
        for form, lab in forms.items():  # multi-word forms first ("en colère", "sin miedo" is negated below)
            if " " not in form or f" {form} " not in f" {joined} ":
                continue
            parts = form.split()
            for i in range(len(tokens) - len(parts) + 1):
                if tokens[i : i + len(parts)] == parts and not _negated(tokens, i, negators, window):
                    direct[lab] = direct.get(lab, 0.0) + self.direct_weight
                    consumed.update(range(i, i + len(parts)))
                    hits.append(form)
        for i, tok in enumerate(tokens):
            if i in consumed or _negated(tokens, i, negators, window):
                continue
            found = forms.get(tok)
            if found is None:
                found = next((lab for a, lab, stem in affixes
                              if (tok.startswith(a) if stem else (tok.endswith(a) and len(tok) > len(a)))), None)
            if found is not None:
                direct[found] = direct.get(found, 0.0) + self.direct_weight
                hits.append(tok)
        plutchik: dict[str, float] = {}
        if lang in TRANSLATED_LEXICONS:  # the language's EmoLex words (NRC's translations)
            negated = {i for i in range(len(tokens)) if _negated(tokens, i, negators, window)}
            for form, emos in lexicon_hits(tokens, lang, negated):
                for e in emos:
                    plutchik[e] = plutchik.get(e, 0.0) + 1.0 / len(emos)
                hits.append(form)
        return plutchik, direct, hits

    def _evidence_en(self, text: str, forms: dict[str, str]) -> tuple[dict[str, float], dict[str, float], list[str]]:
        lex = _lexicon("en")
        plutchik: dict[str, float] = {}
        direct: dict[str, float] = {}
        hits: list[str] = []
        norm = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
        tokens = [t.replace("'", "") for t in _EN_TOKEN.findall(norm)]
        multi = {f: lab for f, lab in forms.items() if " " in f}
        consumed: set[int] = set()
        for form, lab in multi.items():
            parts = form.split()
            for i in range(len(tokens) - len(parts) + 1):
                if tokens[i : i + len(parts)] == parts and not self._negated_en(tokens, i):
                    direct[lab] = direct.get(lab, 0.0) + self.direct_weight
                    consumed.update(range(i, i + len(parts)))
                    hits.append(form)
        for i, tok in enumerate(tokens):
            if i in consumed or self._negated_en(tokens, i):
                continue
            variants = _en_variants(tok)
            found = next((forms[v] for v in variants if v in forms), None)
            if found is not None:
                direct[found] = direct.get(found, 0.0) + self.direct_weight
                hits.append(tok)
            emos = next((lex[v] for v in variants if v in lex), None)
            if emos:
                for e in emos:
                    plutchik[e] = plutchik.get(e, 0.0) + 1.0 / len(emos)
                if found is None:
                    hits.append(tok)
        return plutchik, direct, hits

    @staticmethod
    def _negated_en(tokens: list[str], i: int) -> bool:
        return any(t in _NEGATORS_EN for t in tokens[max(0, i - 2) : i])

    def _evidence_zh(self, text: str, forms: dict[str, str], lexicon: bool = True
                     ) -> tuple[dict[str, float], dict[str, float], list[str]]:
        lex = {w: e for w, e in _lexicon("zh").items() if _CJK.search(w)} if lexicon else {}
        words = set(lex) | {f for f in forms if _CJK.search(f)}
        max_len = max((len(w) for w in words), default=1)
        plutchik: dict[str, float] = {}
        direct: dict[str, float] = {}
        hits: list[str] = []
        s = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))
        i = 0
        while i < len(s):
            match = next((s[i : i + n] for n in range(min(max_len, len(s) - i), 0, -1) if s[i : i + n] in words), None)
            if match is None:
                i += 1
                continue
            negated = any(s[:i].endswith(neg) for neg in _NEGATORS_ZH)
            if not negated:
                if match in forms:
                    direct[forms[match]] = direct.get(forms[match], 0.0) + self.direct_weight
                if match in lex:
                    emos = lex[match]
                    for e in emos:
                        plutchik[e] = plutchik.get(e, 0.0) + 1.0 / len(emos)
                hits.append(match)
            i += len(match)
        # Latin-script words inside Chinese text (rare) still count through the English path.
        latin = " ".join(re.findall(r"[A-Za-z][A-Za-z' ]*", text))
        if latin.strip():
            p2, d2, h2 = self._evidence_en(latin, self._forms("en"))
            for k, v in p2.items():
                plutchik[k] = plutchik.get(k, 0.0) + v
            for k, v in d2.items():
                direct[k] = direct.get(k, 0.0) + v
            hits.extend(h2)
        return plutchik, direct, hits

    def scores(self, item: JudgeInput) -> tuple[dict[str, float], dict[str, float], list[str]]:
        """(total score per label, direct-hit score per label, matched words) for one item."""
        lang = self._lang(item)
        forms = self._forms(lang)
        text = "\n".join(item.rationales)
        if lang in ("zh", "ja"):
            plutchik, direct, hits = self._evidence_zh(text, forms, lexicon=lang == "zh")
        elif lang != "en" and (lang in self.scheme.vocabulary or lang in TRANSLATED_LEXICONS):
            plutchik, direct, hits = self._evidence_spaced(text, forms, lang)
            p_en, _, h_en = self._evidence_en(text, {})  # English lexicon words inside the text still count
            plutchik = {k: plutchik.get(k, 0.0) + p_en.get(k, 0.0) for k in {*plutchik, *p_en}}
            hits.extend(h_en)
        else:
            plutchik, direct, hits = self._evidence_en(text, forms)
        if self.scheme.name == self.plutchik.name:
            mapped = {lab: plutchik.get(lab, 0.0) for lab in self.scheme.labels}
        elif self.scheme.name in self.plutchik.mappings:
            mapped = map_distribution(plutchik, self.plutchik, self.scheme)
        else:
            mapped = dict.fromkeys(self.scheme.labels, 0.0)
        total = {lab: round(mapped.get(lab, 0.0) + direct.get(lab, 0.0), 6) for lab in self.scheme.labels}
        return total, direct, hits

    def judge(self, items: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        """Per tuple, the label whose lexicon words weigh most in its rationales (no verdict without such words)."""
        out: list[JudgeVerdict] = []
        for item in items:
            total, direct, hits = self.scores(item)
            if not any(v > 0 for v in total.values()):
                out.append(_verdict_none(self.id, "no lexicon evidence", total))
                continue
            label = _argmax(total, self.scheme, direct)
            detail = "matched: " + ", ".join(sorted(set(hits))[:12])
            out.append(JudgeVerdict(judge=self.id, label=label, agrees=label == item.label, scores=total,
                                    detail=detail))
        return out


@lru_cache(maxsize=32)
def _negators(lang: str) -> tuple[frozenset[str], int]:
    """The one-word negators that precede a word in `lang` (from its label vocabulary) and their window."""
    from culturekb.kb.vocab import load_vocabulary, vocabulary_languages

    if lang not in vocabulary_languages():
        return frozenset(), 0
    rules = load_vocabulary(lang).negation
    return frozenset(w.lower() for w in rules.before if " " not in w), max(1, min(rules.window, 3))


def _negated(tokens: list[str], i: int, negators: frozenset[str], window: int) -> bool:
    return any(t in negators for t in tokens[max(0, i - window) : i])


# ----------------------------------------------------------------------------------------------------------
# prototype
# ----------------------------------------------------------------------------------------------------------
class PrototypeJudge:
    """Nearest label prototype in embedding space (offline).

    A label's prototype is the normalised mean of the embeddings of its description (from the scheme file) and
    its name; for an item whose culture's language is not English, the label's translations into that language
    (from the scheme file; else the first four words of its label vocabulary in that language) are averaged in
    too, which helps a multilingual embedder. An item's vector is the
    normalised mean of its rationales' embeddings. The predicted label has the highest cosine similarity (ties:
    the label first in the scheme); `scores` holds the cosine per label. All rationales of a batch are embedded
    in one `encode` call; prototypes once per language. With the default English MiniLM embedder, non-English
    rationales are judged poorly: use a multilingual embedder (e.g. "use") for them.
    """

    def __init__(
        self,
        embedder: Embedder,
        scheme: EmotionScheme | str,
        language_of: Callable[[str], str] | None = None,
    ) -> None:
        self.embedder = embedder
        self.scheme = get_scheme(scheme)
        self.language_of = language_of or culture_language
        missing = [lab for lab in self.scheme.labels if not self.scheme.descriptions.get(lab)]
        if missing:
            logger.warning(
                "PrototypeJudge: scheme %r has no description for %s; those prototypes use the label name only",
                self.scheme.name, missing,
            )
        self._prototypes: dict[str, np.ndarray] = {}
        self.id = f"prototype:{embedder.id}:{self.scheme.name}:{stable_hash(self.scheme.to_dict())[:8]}"

    def _known(self, lang: str) -> bool:
        return lang != "en" and (lang in self.scheme.translations or lang in self.scheme.vocabulary)

    def _key(self, culture: str) -> str:
        lang = self.language_of(culture).lower()
        return lang if self._known(lang) else "en"

    def _words(self, key: str, label: str) -> tuple[str, ...]:
        """The label's words in `key`: the scheme's translations, else its vocabulary's words (stems unmarked)."""
        if key == "en":
            return ()
        if key in self.scheme.translations:
            return tuple(self.scheme.translations[key].get(label, ()))
        return tuple(w.strip("*") for w in self.scheme.vocabulary.get(key, {}).get(label, ())[:4])

    def prototypes(self, language: str = "en") -> np.ndarray:
        """Shape (n_labels, dim): one unit vector per label, in scheme order, for `language`."""
        key = language if self._known(language) else "en"
        if key not in self._prototypes:
            texts: list[str] = []
            owners: list[int] = []
            for i, lab in enumerate(self.scheme.labels):
                extra = self._words(key, lab)
                for text in (self.scheme.descriptions.get(lab), lab, *extra):
                    if text:
                        texts.append(text)
                        owners.append(i)
            vecs = np.asarray(self.embedder.encode(texts), dtype=np.float32)
            protos = np.zeros((len(self.scheme.labels), vecs.shape[1]), dtype=np.float32)
            np.add.at(protos, np.asarray(owners), vecs)
            protos /= np.maximum(np.linalg.norm(protos, axis=1, keepdims=True), 1e-12)
            self._prototypes[key] = protos
        return self._prototypes[key]

    def embedding_texts(self, items: Sequence[JudgeInput]) -> list[str]:
        """The distinct rationale texts `judge(items)` embeds, first-seen order (a build embeds them in one pass)."""
        return list(dict.fromkeys(r for it in items for r in it.rationales if r.strip()))

    def with_embedder(self, embedder: Embedder) -> PrototypeJudge:
        """The same judge (same scheme, languages and id) embedding through `embedder`, e.g. a build's vector
        cache in front of this judge's embedder; `embedder.id` must be this one's."""
        if embedder.id != self.embedder.id:
            raise ConfigError(f"PrototypeJudge.with_embedder: embedder {embedder.id!r} is not {self.embedder.id!r}; "
                              "the judge's id names its embedder")
        clone = copy.copy(self)
        clone.embedder = embedder
        clone._prototypes = {}
        return clone

    def judge(self, items: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        """Per tuple, the label whose prototype is nearest to the mean embedding of its rationales (one encode call)."""
        texts = [r for it in items for r in it.rationales if r.strip()]
        if not texts:
            return [_verdict_none(self.id, "no rationales") for _ in items]
        vecs = np.asarray(self.embedder.encode(texts), dtype=np.float32)
        out: list[JudgeVerdict] = []
        start = 0
        for it in items:
            n = sum(1 for r in it.rationales if r.strip())
            if n == 0:
                out.append(_verdict_none(self.id, "no rationales"))
                continue
            mean = vecs[start : start + n].mean(axis=0)
            start += n
            mean /= max(float(np.linalg.norm(mean)), 1e-12)
            sims = self.prototypes(self._key(it.culture)) @ mean
            scores = {lab: round(float(s), 6) for lab, s in zip(self.scheme.labels, sims, strict=True)}
            label = self.scheme.labels[int(np.argmax(sims))]
            out.append(JudgeVerdict(judge=self.id, label=label, agrees=label == it.label, scores=scores,
                                    detail=f"cosine {scores[label]:.3f} to the '{label}' prototype"))
        return out


# ----------------------------------------------------------------------------------------------------------
# registry
# ----------------------------------------------------------------------------------------------------------
def prototype_judge(scheme: EmotionScheme | str = "artemis9", embedder: Embedder | None = None, **kw: Any
                    ) -> PrototypeJudge:
    """Factory of ``prototype`` (registered in `culturekb.registry.JUDGES`): the configured embedder (the
    embedder setting, MiniLM by default) unless `embedder` is given."""
    if embedder is None:
        from culturekb.config import load_settings
        from culturekb.models.factory import make_embedder

        embedder = make_embedder(load_settings().embedder)
    return PrototypeJudge(embedder, scheme, **kw)


lexicon_factory = registry.without_argument(LexiconJudge, "judge", "lexicon")
prototype_factory = registry.without_argument(prototype_judge, "judge", "prototype")


def make_judge(spec: str, scheme: EmotionScheme | str = "artemis9", **kw: Any) -> Judge:
    """A judge by spec: a `culturekb.registry.JUDGES` name ("lexicon", "prototype" with embedder= or the default
    MiniLM), else any model-client spec ("openai:MODEL", "hf:PATH" or a plug-in client), which makes an `LLMJudge`.

    For a client spec, `base_url` and `client_kwargs` (a dict: cache, max_concurrency ...) go to
    `culturekb.models.factory.make_client`, or pass a ready `client=`; the other keywords go to `LLMJudge`.
    """
    source = registry.which(spec, registry.JUDGES, registry.CLIENTS, kind="judge")
    if source is registry.JUDGES:
        judge: Judge = registry.JUDGES.create(spec, scheme=scheme, **kw)
        return judge
    from culturekb.models.factory import make_client

    base_url = kw.pop("base_url", None)
    client_kwargs = kw.pop("client_kwargs", None) or {}
    client = kw.pop("client", None) or make_client(spec, base_url=base_url, **client_kwargs)
    return LLMJudge(client, scheme, **kw)
