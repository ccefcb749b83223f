"""Exact-then-semantic lookup of a culture's tuples (paper, inference step 2).

For each query concept and target culture: the query is normalised like KB concepts (`normalise_concept`);
an exact match among that culture's concepts wins (score 1.0, kind "exact"); otherwise the most similar
concept of that culture by embedding cosine similarity, if it is >= tau (kind "semantic"); otherwise None.
A batch costs one `encode` call (distinct non-exact queries only) and one store `search` call.

Choice of the default tau (DEFAULT_TAU = 0.70)
-----------------------------------------------
Measured by benchmarks/tau_calibration.py on culturekb/data/tau_pairs.jsonl: 210 labelled concept pairs
written for this purpose (granularity and wording variants such as "bamboo grove"/"bamboo", plurals,
synonyms such as "sea"/"ocean", colour + object, and pairs that must NOT match: lexical near misses such as
"full moon"/"full house" or "dragon"/"dragonfly", co-hyponyms such as "cherry blossom"/"plum blossom", colour
changes such as "red rose"/"white rose", unrelated pairs). 7 pairs normalise to the same string (exact
matches); the other 203 are encoded with the default embedder (all-MiniLM-L6-v2). Predicted "match": cosine
>= tau and no colour conflict (see below). Precision / recall (benchmarks/results/tau_curve.md):

    tau 0.60: P 0.737  R 0.897        tau 0.70: P 0.869  R 0.753   <- default
    tau 0.65: P 0.794  R 0.835        tau 0.75: P 0.913  R 0.649        tau 0.80: P 0.977  R 0.443

Rule: the highest recall with precision >= 0.85, because a wrong tuple in the prompt misleads the model while
a missing one only leaves it where it started (0.70 also ties the best F0.5, 0.843 vs 0.845 at 0.75).
Without the colour guard, precision at 0.70 drops to 0.793 at the same recall. Remaining errors at 0.70 are
lexical near misses the embedding cannot separate ("construction crane"/"crane" 0.86, "dragon"/"dragonfly"
0.77) and co-hyponyms ("cherry blossom"/"plum blossom" 0.75, "mother"/"father" 0.73); misses are loose
synonyms and head-noun shifts ("stream"/"creek" 0.43, "fog"/"mist" 0.56, "old man"/"man" 0.56).

Colour guard (on by default): a semantic candidate is rejected when query and concept both name colours and
share none ("red lantern" never falls back to "white lantern"): colour often carries the cultural meaning
(red for luck, white for mourning) and the embedding rates such pairs 0.77-0.86. The search fetches a few
extra candidates so that the next one of the culture can still match.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from culturekb.config import Settings, load_settings
from culturekb.errors import ConfigError, DataError, IndexError_
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import Embedder
from culturekb.retrieval.filters import StatusFilter, TupleFilter, check_status
from culturekb.retrieval.index import (
    INDEX_META,
    KBIndex,
    build_index,
    index_backend,
    index_dir,
    load_index,
    read_index_meta,
)
from culturekb.text.normalise import MAX_CONCEPT_CHARS, normalise_concept

__all__ = ["DEFAULT_TAU", "MAX_QUERY_CHARS", "Match", "Retriever", "open_retriever", "colour_conflict", "colour_words"]

log = logging.getLogger(__name__)

DEFAULT_TAU = 0.70
"""Cosine threshold of a semantic match; see the module docstring for how it was chosen."""

MAX_QUERY_CHARS = MAX_CONCEPT_CHARS
"""Longer query concepts are cut at the last word boundary within this many characters before normalising."""

_GUARD_EXTRA = 4
"""Extra candidates fetched per query when the colour guard may reject the nearest ones."""

_FILTER_EXTRA = 16
"""Extra candidates fetched per query when the tuple filter hides some tuples of the searched cultures."""

MatchKind = Literal["exact", "semantic"]
CrossCulture = bool | str | Sequence[str]


@dataclass(frozen=True)
class Match:
    """The tuple found for one query concept.

    `query`: the concept as given; `score`: 1.0 for exact, else the cosine similarity; `alternatives`: with
    k > 1, up to k-1 further tuples of the same culture scope whose cosine is >= tau, best first.
    """

    query: str
    tuple: KnowledgeTuple
    score: float
    kind: MatchKind
    alternatives: builtins.tuple[Match, ...] = ()

    @property
    def concept(self) -> str:
        """The concept of the matched tuple."""
        return self.tuple.concept

    @property
    def culture(self) -> str:
        """The culture of the matched tuple."""
        return self.tuple.culture


class Retriever:
    """Looks up query concepts in one culture's tuples of a KB through a prebuilt index (see `build_index`).

    `index` must have been built for this KB version and this embedder (IndexError_ otherwise). `tau`: default
    cosine threshold; `language`: language of the concepts, for `normalise_concept`; `colour_guard`: reject
    semantic candidates naming other colours; `encode_batch_size`: batch size of the one encode call;
    `tuple_filter`: which tuples are served (`culturekb.retrieval.filters`; default: all but rejected ones).
    Hidden tuples are never returned, neither as exact nor as semantic matches.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        index: KBIndex,
        embedder: Embedder,
        tau: float = DEFAULT_TAU,
        language: str = "en",
        colour_guard: bool = True,
        encode_batch_size: int = 256,
        tuple_filter: TupleFilter | None = None,
    ) -> None:
        index.check(kb, embedder)
        self.kb = kb
        self.index = index
        self.embedder = embedder
        self.tau = _check_tau(tau)
        self.language = language
        self.colour_guard = colour_guard
        self.encode_batch_size = encode_batch_size
        self.tuple_filter = tuple_filter or TupleFilter()
        self._by_id: dict[str, KnowledgeTuple] = {t.id: t for t in kb.tuples}
        priors = kb.label_prior() if self.tuple_filter.min_informativeness > 0 else {}
        self.hidden: dict[str, str] = {}
        """id -> why the filter hides it, for every hidden tuple."""
        self._exact: dict[str, dict[str, KnowledgeTuple]] = {}
        for t in kb.tuples:
            why = self.tuple_filter.reason(t, priors.get(t.culture))
            if why is not None:
                self.hidden[t.id] = why
                continue
            key = normalise_concept(t.concept, language) or t.concept
            self._exact.setdefault(t.culture, {}).setdefault(key, t)
        self._hidden_cultures = {self._by_id[i].culture for i in self.hidden}
        self.cultures: list[str] = sorted(set(kb.cultures) | {t.culture for t in kb.tuples})

    def with_filter(self, tuple_filter: TupleFilter | None = None, *, status: StatusFilter | None = None
                    ) -> Retriever:
        """This retriever (same KB, index and embedder) serving another filter; with only `status`, the current
        filter with that status. Returns itself when nothing changes."""
        new = tuple_filter or self.tuple_filter
        if status is not None:
            new = TupleFilter(check_status(status), new.min_support, new.min_informativeness)
        if new == self.tuple_filter:
            return self
        return Retriever(self.kb, self.index, self.embedder, self.tau, self.language, self.colour_guard,
                         self.encode_batch_size, new)

    def with_tau(self, tau: float | None) -> Retriever:
        """This retriever with another semantic-match threshold (`tau`; None or the same: itself). The threshold
        lives here only: services and augmenters read it from their retriever."""
        if tau is None or _check_tau(tau) == self.tau:
            return self
        return Retriever(self.kb, self.index, self.embedder, tau, self.language, self.colour_guard,
                         self.encode_batch_size, self.tuple_filter)

    def served(self, culture: str) -> list[KnowledgeTuple]:
        """The tuples of `culture` this retriever serves (the filter applied), in KB order."""
        return [t for t in self.kb.for_culture(culture) if t.id not in self.hidden]

    # -- argument checks ------------------------------------------------------------------------------
    def resolve_culture(self, culture: str) -> str:
        """A KB culture id from an id or alias; an unknown culture raises ConfigError listing the KB's."""
        if culture in self._exact or culture in self.cultures:
            return culture
        resolved: str | None
        try:
            resolved = self.kb.culture(culture).id
        except ConfigError:
            resolved = None
        if resolved is None or resolved not in self.cultures:
            raise ConfigError(
                f"culture {culture!r} is not in this KB; its cultures are: {', '.join(self.cultures) or '(none)'}. "
                "Use one of these ids (or an alias of one), or build the KB with that culture's data"
            )
        return resolved

    def _scope(self, target: str, cross_culture: CrossCulture) -> list[str]:
        if cross_culture is False:
            return [target]
        if cross_culture is True:
            others = [c for c in self.cultures if c != target]
            if not others:
                raise ConfigError(
                    f"cross-culture lookup needs a culture other than {target!r}, but the KB only has {self.cultures}"
                )
            return others
        names = [cross_culture] if isinstance(cross_culture, str) else list(cross_culture)
        if not names:
            raise ConfigError("cross_culture is an empty list; pass True, False, or the cultures to search")
        return list(dict.fromkeys(self.resolve_culture(c) for c in names))

    def normalise(self, concepts: Sequence[str], on_invalid: Literal["raise", "skip"] = "raise") -> list[str | None]:
        """The lookup form of each query (None where invalid and `on_invalid="skip"`)."""
        if isinstance(concepts, str):
            raise ConfigError(
                f"concepts must be a list of strings, not one string ({concepts!r}); wrap it: [{concepts!r}]"
            )
        out: list[str | None] = []
        for i, raw in enumerate(concepts):
            problem = None
            norm: str | None = None
            if not isinstance(raw, str):
                problem = f"is a {type(raw).__name__}, not a string"
            elif not raw.strip():
                problem = "is empty or whitespace"
            else:
                text = raw.strip()
                if len(text) > MAX_QUERY_CHARS:
                    cut = text[:MAX_QUERY_CHARS]
                    space = cut.rfind(" ")
                    text = cut[:space] if space >= MAX_QUERY_CHARS // 2 else cut
                    log.warning("query concept %d (%d chars) cut to %r (limit %d)", i, len(raw), text, MAX_QUERY_CHARS)
                norm = normalise_concept(text, self.language)
                if norm is None:
                    problem = (
                        f"({raw[:40]!r}) has no content words after normalisation (only stopwords, digits or symbols)"
                    )
            if problem is not None:
                if on_invalid == "skip":
                    out.append(None)
                    continue
                raise DataError(
                    f"query concept at index {i} {problem}; pass non-empty concept phrases such as 'full moon', "
                    "or use on_invalid='skip' to get None for it"
                )
            out.append(norm)
        return out

    # -- lookup ---------------------------------------------------------------------------------------
    def lookup(
        self,
        concepts: Sequence[str],
        culture: str,
        tau: float | None = None,
        k: int = 1,
        cross_culture: CrossCulture = False,
        on_invalid: Literal["raise", "skip"] = "raise",
        vectors: Mapping[str, np.ndarray] | None = None,
    ) -> list[Match | None]:
        """Per query concept, the best tuple of `culture` (exact, else semantic with cosine >= tau) or None.

        `cross_culture=True` searches every other culture of the KB instead of `culture` (the cross-culture
        ablation); a culture id or list searches those. With several cultures in scope, an exact match is
        taken from the culture with the largest support. `k > 1` fills `Match.alternatives`. `vectors`: see
        `lookup_many`.
        """
        return self.lookup_many(
            [(concepts, culture)], tau=tau, k=k, cross_culture=cross_culture, on_invalid=on_invalid,
            vectors=vectors,
        )[0]

    def lookup_many(
        self,
        requests: Sequence[tuple[Sequence[str], str]],
        tau: float | None = None,
        k: int = 1,
        cross_culture: CrossCulture = False,
        on_invalid: Literal["raise", "skip"] = "raise",
        vectors: Mapping[str, np.ndarray] | None = None,
    ) -> list[list[Match | None]]:
        """`lookup` for many (concepts, culture) requests: one encode call for all of them and one search call
        per distinct culture scope. `vectors`: embeddings already made for some of the texts `to_encode` names
        (the API awaits them from its micro-batcher); only the others are encoded."""
        tau_ = self.tau if tau is None else _check_tau(tau)
        prepared, results, pending = self._exact_pass(requests, k, cross_culture, on_invalid)
        if not pending:
            return results

        texts = list(dict.fromkeys(t for group in pending.values() for t in group))
        given = vectors or {}
        missing = [t for t in texts if t not in given]
        encoded = (np.asarray(self.embedder.encode(missing, batch_size=self.encode_batch_size), dtype=np.float32)
                   if missing else np.zeros((0, self.embedder.dim), dtype=np.float32))
        if given:  # rows in `texts` order, the given ones and the ones just encoded
            fresh = dict(zip(missing, encoded, strict=True))
            matrix = np.stack([given[t] if t in given else fresh[t] for t in texts]).astype(np.float32, copy=False)
        else:  # nothing given (every caller but the API's lookup route): the encoded rows as they are
            matrix = encoded
        row_of = {t: i for i, t in enumerate(texts)}
        found: dict[tuple[tuple[str, ...], str], list[tuple[KnowledgeTuple, float]]] = {}
        for scope_key, group in pending.items():
            names = list(group)
            rows = [row_of[t] for t in names]
            flt: str | list[str] = scope_key[0] if len(scope_key) == 1 else list(scope_key)
            fetch = k + (_GUARD_EXTRA if self.colour_guard else 0)
            if self._hidden_cultures.intersection(scope_key):
                fetch += _FILTER_EXTRA
            hits = self.index.store.search(matrix[rows], k=fetch, culture=flt)
            for name, hit_list in zip(names, hits, strict=True):
                kept = [(self._tuple(i), s) for i, s in hit_list if s >= tau_ and i not in self.hidden]
                if self.colour_guard:
                    kept = [(t, s) for t, s in kept if not colour_conflict(name, t.concept)]
                found[(scope_key, name)] = kept[:k]

        for (concepts, _), (norms, scope), row in zip(requests, prepared, results, strict=True):
            for j, (raw, norm) in enumerate(zip(concepts, norms, strict=True)):
                if norm is None:
                    continue
                sem = found.get((tuple(scope), norm), [])
                current = row[j]
                if current is not None:  # exact: semantic neighbours become alternatives
                    alts = [Match(raw, t, s, "semantic") for t, s in sem if t.id != current.tuple.id][: k - 1]
                    row[j] = Match(raw, current.tuple, 1.0, "exact", tuple(alts))
                elif sem:
                    best, rest = sem[0], sem[1:k]
                    alts = [Match(raw, t, s, "semantic") for t, s in rest]
                    row[j] = Match(raw, best[0], float(best[1]), "semantic", tuple(alts))
        return results

    def to_encode(
        self,
        requests: Sequence[tuple[Sequence[str], str]],
        k: int = 1,
        cross_culture: CrossCulture = False,
        on_invalid: Literal["raise", "skip"] = "raise",
    ) -> list[str]:
        """The texts `lookup_many` with these arguments would embed (normalised concepts without an exact match,
        every one when `k` > 1), in order, each once."""
        pending = self._exact_pass(requests, k, cross_culture, on_invalid)[2]
        return list(dict.fromkeys(t for group in pending.values() for t in group))

    def _exact_pass(
        self, requests: Sequence[tuple[Sequence[str], str]], k: int, cross_culture: CrossCulture,
        on_invalid: Literal["raise", "skip"],
    ) -> tuple[list[tuple[list[str | None], list[str]]], list[list[Match | None]],
               dict[tuple[str, ...], dict[str, None]]]:
        """(normalised concepts and culture scope per request, exact matches per request, the texts left for the
        search per scope): what is left, or everything when alternatives are wanted, goes to the search."""
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"k must be a positive integer; got {k!r}")
        prepared: list[tuple[list[str | None], list[str]]] = []
        for concepts, culture in requests:
            norms = self.normalise(concepts, on_invalid)
            scope = self._scope(self.resolve_culture(culture), cross_culture)
            prepared.append((norms, scope))
        results: list[list[Match | None]] = []
        pending: dict[tuple[str, ...], dict[str, None]] = {}
        for (concepts, _), (norms, scope) in zip(requests, prepared, strict=True):
            row: list[Match | None] = []
            for raw, norm in zip(concepts, norms, strict=True):
                hit = self._exact_hit(norm, scope) if norm is not None else None
                row.append(Match(raw, hit, 1.0, "exact") if hit is not None else None)
                if norm is not None and (hit is None or k > 1):
                    pending.setdefault(tuple(scope), {})[norm] = None
            results.append(row)
        return prepared, results, pending

    def _exact_hit(self, norm: str, scope: list[str]) -> KnowledgeTuple | None:
        hits = [t for c in scope if (t := self._exact.get(c, {}).get(norm)) is not None]
        if not hits:
            return None
        return max(hits, key=lambda t: (t.support, -scope.index(t.culture)))

    def _tuple(self, id_: str) -> KnowledgeTuple:
        t = self._by_id.get(id_)
        if t is None:
            raise IndexError_(
                f"the index returned id {id_!r}, which is not a tuple of this KB; the index is stale, rebuild it "
                f"with `culturekb index --kb {self.kb.path or '<KB_DIR>'} --backend {self.index.meta.backend}`"
            )
        return t


_COLOUR_CANON = {"gray": "grey", "golden": "gold", "crimson": "red", "scarlet": "red", "navy": "blue"}


@lru_cache(maxsize=1)
def colour_words() -> frozenset[str]:
    """The [colours] section of the packaged word list culturekb/data/text_concepts_en.txt."""
    text = resources.files("culturekb.data").joinpath("text_concepts_en.txt").read_text("utf-8")
    words: set[str] = set()
    section = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip().lower()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif line and section == "colours":
            words.add(line)
    return frozenset(words)


def _colours(concept: str) -> set[str]:
    known = colour_words()
    return {_COLOUR_CANON.get(w, w) for w in concept.split() if w in known}


def colour_conflict(query: str, concept: str) -> bool:
    """True when both name colours and share none ("red rose" vs "white rose", "black" vs "white").

    Colour often carries the cultural meaning (red for luck, white for mourning), and sentence embeddings
    rate such pairs as very similar, so the retriever rejects them as semantic matches by default.
    """
    q, c = _colours(query), _colours(concept)
    return bool(q) and bool(c) and not (q & c)


def _check_tau(tau: Any) -> float:
    if not isinstance(tau, int | float) or isinstance(tau, bool) or not -1.0 <= float(tau) <= 1.0:
        raise ConfigError(f"tau must be a cosine similarity between -1 and 1 (typically 0.5-0.8); got {tau!r}")
    return float(tau)


EmbedderFactory = Callable[[str], Embedder]
"""Makes an embedder from a spec; `open_retriever` takes one so that callers can share loaded models."""


def open_retriever(
    kb: KnowledgeBase | str | Path,
    embedder: Embedder | str | None = None,
    backend: str | None = None,
    *,
    build: bool = True,
    tau: float | None = None,
    colour_guard: bool = True,
    mmap: bool = True,
    settings: Settings | None = None,
    embedder_factory: EmbedderFactory | None = None,
    status: StatusFilter = "all",
    calibrated: bool = True,
    query_cache: bool = True,
    **store_kw: Any,
) -> Retriever:
    """A Retriever over a KB (a `KnowledgeBase` or its directory), its index opened read-only.

    The index says how to reopen it: left out, `embedder` is the one the index records and `backend` is chosen
    by `index_backend` (the configured backend, else the KB's only index). A given `embedder` (an Embedder or a
    spec) must be the index's: another one is an error, never a silent rebuild. When the index is missing and
    `build`, it is built with `embedder`, else the configured embedder (`culturekb.config`); a KB without a
    directory gets an in-memory index. `tau` defaults to the configured tau, else DEFAULT_TAU. `settings`
    defaults to `load_settings()`; `embedder_factory` (default `make_embedder`) turns specs into embedders.
    `status` filters tuples by review status; with `calibrated`, the concept filter of the KB's
    `calibration.json` (when it has one) hides the tuples it dropped.

    With the default factory, an embedder rebuilt from the index is made on its first encode (a lookup answered by
    exact matches loads no model), and with `query_cache` a local embedder's query vectors are kept on disk under
    the settings' cache dir (`culturekb.models.embedding_cache`), so a repeated query is not encoded again.
    """
    settings = settings if settings is not None else load_settings()
    if not isinstance(kb, KnowledgeBase):
        kb = KnowledgeBase.load(kb)
    tuple_filter = _kb_filter(kb, check_status(status), calibrated)
    tau = tau if tau is not None else settings.tau if settings.tau is not None else DEFAULT_TAU
    make = embedder_factory or _make_embedder
    given = embedder if embedder is not None and not isinstance(embedder, str) else None
    if kb.path is None:
        emb = given or make(embedder if isinstance(embedder, str) else settings.embedder)
        index = build_index(kb, emb, backend or settings.backend, persist=False, **store_kw)
        return Retriever(kb, index, emb, tau, colour_guard=colour_guard, tuple_filter=tuple_filter)
    name = index_backend(kb, backend, settings)
    folder = index_dir(kb, name)
    if not (folder / INDEX_META).is_file():
        if not build:  # load_index raises the error that says how to build it
            load_index(kb, "", name)
        spec = embedder if isinstance(embedder, str) else settings.embedder
        emb = given or make(spec)
        index = build_index(kb, emb, name, mmap=mmap, embedder_spec=None if given else spec, **store_kw)
        return Retriever(kb, index, emb, tau, colour_guard=colour_guard, tuple_filter=tuple_filter)
    cache = query_cache and embedder_factory is None
    if given is not None:
        emb = given
    elif isinstance(embedder, str):
        emb = _with_query_cache(make(embedder), embedder, settings) if cache else make(embedder)
    else:
        meta = read_index_meta(folder, hint=f"rebuild it with `culturekb index --kb {kb.path}`")
        spec = meta.require_spec(folder)
        if embedder_factory is None:
            from culturekb.models.embedding_cache import LazyEmbedder

            emb = LazyEmbedder(spec, meta.embedder, meta.dim, make)
            emb = _with_query_cache(emb, spec, settings) if cache else emb
        else:
            emb = make(spec)
    index = load_index(
        kb,
        emb,
        name,
        mmap=mmap,
        **{k: v for k, v in store_kw.items() if k in ("url", "api_key", "timeout", "ef_search", "nprobe")},
    )
    return Retriever(kb, index, emb, tau, colour_guard=colour_guard, tuple_filter=tuple_filter)


_LOCAL_EMBEDDERS = ("minilm", "use", "st:")
QUERY_CACHE_FILE = "query_embeddings.sqlite"
"""The query-embedding cache's file name under the settings' cache dir."""


def _with_query_cache(emb: Embedder, spec: str, settings: Settings) -> Embedder:
    """`emb` behind the on-disk query-embedding cache, for local models (a remote endpoint's vectors are keyed by
    its URL, which a test or a redeployed server may reuse for another model, so those are not cached)."""
    if not spec.startswith(_LOCAL_EMBEDDERS):
        return emb
    from culturekb.models.embedding_cache import CachedEmbedder, EmbeddingCache

    try:
        return CachedEmbedder(emb, EmbeddingCache(Path(settings.cache_dir) / QUERY_CACHE_FILE))
    except ConfigError as exc:
        log.warning("query embeddings are not cached: %s", exc)
        return emb


def _kb_filter(kb: KnowledgeBase, status: StatusFilter, calibrated: bool) -> TupleFilter:
    """The status filter, plus the concept filter of the KB's calibration when asked and present."""
    if not calibrated or kb.path is None:
        return TupleFilter(status=status)
    from culturekb.kb.calibration import read_calibration

    return TupleFilter.from_calibration(read_calibration(kb.path, kb.version), status)


def _make_embedder(spec: str) -> Embedder:
    from culturekb.models.factory import make_embedder

    return make_embedder(spec)
