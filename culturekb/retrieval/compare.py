"""Where cultures disagree about the same thing: concepts aligned across cultures (and languages), compared by
their emotion distributions.

A culture's concepts are in its own language (``city`` in en, ``城市`` in zh, ``stadt`` in de), so comparing
cultures first needs an alignment of concepts across them. Two kinds, per pair of cultures:

* **same string**: both cultures hold the identical (normalised) concept, e.g. a name or a loan word shared by
  the languages (``job``, ``video``). Identical strings can be false friends (de ``mal`` "once" vs es ``mal``
  "bad"); the table marks these pairs so that a reader can check.
* **semantic**: a multilingual embedder (``use`` by default for multilingual KBs) puts the two concepts close.
  A pair is kept when (1) its cosine similarity is at least ``tau`` (0.70: precision 1.0 on the 119 labelled
  cross-language pairs of ``benchmarks/results/cross_language_tau.md``), (2) the two concepts are each other's
  nearest neighbour by CSLS, the hubness-corrected similarity of bilingual lexicon induction (Conneau et al.
  2018, "Word translation without parallel data"):
  ``csls(a, b) = 2 cos(a, b) - r_B(a) - r_A(b)``, ``r_B(a)`` being the mean cosine of ``a`` to its
  ``neighbours`` nearest concepts of the other culture, and (3) that CSLS is at least ``min_margin``.
  Short interjections and function words (ru ``воу``, ``ого``; de ``fehlen``, ``daran``) sit close to many
  words of every language (hubs) and pass a cosine threshold; their CSLS stays low. DEFAULT_MIN_MARGIN = 0.25:
  every labelled translation of ``culturekb/data/cross_language_pairs.jsonl`` that passes tau 0.70 has a CSLS of
  0.28 or more (51 of 51, neighbours 5), while the hub pairs read in the BRIGHTER demo KB score 0.07-0.23. It was
  set by reading those pairs, not fitted on a held-out set; pass ``min_margin=None`` to turn the check off.

Concepts the embedder cannot tell apart are not aligned semantically: when a concept's vector is a near copy
(cosine >= INDISTINCT_COS) of another concept's vector of the same culture, the embedder does not cover that
language (USE has no Hindi: different Devanagari words get the same vector), and any "match" would be noise.
Those concepts still align by identical strings. `Comparison.indistinct` counts them per culture.

Two aligned tuples **disagree** when their dominant emotions differ. Each disagreement carries both distributions,
both supports, the Jensen-Shannon divergence (`culturekb.kb.distribution.js_divergence`, bits, in [0, 1]) and a
score that discounts thin evidence the way `culturekb.kb.stats.divergence` does: ``jsd * m / (m + shrinkage)``,
``m`` the smaller support. Only tuples with support >= ``min_support`` (3 by default) in each culture are compared,
so a split seen on one text per culture never shows up.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from culturekb.errors import ConfigError
from culturekb.kb.distribution import js_divergence
from culturekb.kb.lines import kb_tie_break, tuple_summary
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import Embedder
from culturekb.retrieval.retriever import DEFAULT_TAU, Retriever

__all__ = [
    "DEFAULT_MIN_MARGIN",
    "DEFAULT_MIN_SUPPORT",
    "INDISTINCT_COS",
    "AlignKind",
    "Comparison",
    "Disagreement",
    "compare_cultures",
    "render_comparison_markdown",
]

DEFAULT_MIN_SUPPORT = 3
"""Smallest support, in each culture, of a compared tuple."""

DEFAULT_MIN_MARGIN = 0.25
"""Smallest CSLS of a semantic alignment (see the module docstring for how it was chosen)."""

INDISTINCT_COS = 0.99
"""A concept whose vector is this close to another concept's of the same culture is not aligned semantically."""

AlignKind = Literal["same string", "semantic"]


@dataclass(frozen=True)
class Disagreement:
    """Two aligned tuples of two cultures whose dominant emotions differ.

    `similarity`: cosine of the two concepts (1.0 for the same string); `margin`: their CSLS (None for the same
    string); `jsd`: Jensen-Shannon divergence of the two distributions (bits); `score`: ``jsd * m / (m + k)``."""

    a: KnowledgeTuple
    b: KnowledgeTuple
    kind: AlignKind
    similarity: float
    margin: float | None
    jsd: float
    score: float

    @property
    def cultures(self) -> tuple[str, str]:
        """The two cultures, in the order of the pair."""
        return self.a.culture, self.b.culture

    @property
    def min_support(self) -> int:
        """The smaller of the two supports."""
        return min(self.a.support, self.b.support)

    def to_dict(self, order: Sequence[str] | None = None, tie_break: str | None = None) -> dict[str, Any]:
        """JSON form: both sides (concept, culture, dominant label, support, distribution, readable summary)."""

        def side(t: KnowledgeTuple) -> dict[str, Any]:
            return {"concept": t.concept, "culture": t.culture, "label": t.label, "support": t.support,
                    "distribution": dict(t.distribution), "status": t.status, "tuple_id": t.id,
                    "describe": tuple_summary(t, k=3, order=order, tie_break=tie_break)}

        concept = self.a.concept if self.a.concept == self.b.concept else f"{self.a.concept} / {self.b.concept}"
        return {"concept": concept, "concepts": {self.a.culture: self.a.concept, self.b.culture: self.b.concept},
                "a": side(self.a), "b": side(self.b), "kind": self.kind, "similarity": round(self.similarity, 4),
                "margin": None if self.margin is None else round(self.margin, 4), "jsd": round(self.jsd, 4),
                "score": round(self.score, 4)}


@dataclass
class Comparison:
    """What `compare_cultures` found: the disagreements (best first) and what was aligned and skipped."""

    cultures: tuple[str, ...]
    disagreements: list[Disagreement]
    aligned: dict[str, int] = field(default_factory=dict)
    """Per culture pair ("de/en"), how many concept pairs were aligned (agreeing ones included)."""
    compared: dict[str, int] = field(default_factory=dict)
    """Per culture, how many tuples had enough support to be compared."""
    indistinct: dict[str, int] = field(default_factory=dict)
    """Per culture, concepts the embedder cannot tell apart (aligned by identical strings only)."""
    settings: dict[str, Any] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    priors: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per culture, its training label distribution (to read a disagreement against)."""
    alignments: list[tuple[KnowledgeTuple, KnowledgeTuple, AlignKind, float, float | None]] = field(
        default_factory=list)
    """Every aligned pair (agreeing ones too): (tuple a, tuple b, kind, cosine, CSLS)."""

    def counterparts(self, tuple_id: str) -> list[dict[str, Any]]:
        """The tuples of other cultures aligned with the tuple `tuple_id` (same string or translation), each with
        how it was aligned: what a concept is called, and what it evokes, in the other cultures."""
        out = []
        for a, b, kind, sim, margin in self.alignments:
            other = b if a.id == tuple_id else a if b.id == tuple_id else None
            if other is not None:
                out.append({"tuple": other, "kind": kind, "similarity": round(sim, 4),
                            "margin": None if margin is None else round(margin, 4)})
        return sorted(out, key=lambda x: (x["tuple"].culture, -x["similarity"]))

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the whole comparison."""
        return {"cultures": list(self.cultures), "settings": dict(self.settings), "aligned": dict(self.aligned),
                "compared": dict(self.compared), "indistinct": dict(self.indistinct),
                "disagreements": [d.to_dict(self.labels, self.settings.get("tie_break"))
                                  for d in self.disagreements]}


def compare_cultures(
    source: Retriever | KnowledgeBase,
    cultures: Sequence[str] | None = None,
    *,
    embedder: Embedder | None = None,
    min_support: int = DEFAULT_MIN_SUPPORT,
    tau: float = DEFAULT_TAU,
    min_margin: float | None = DEFAULT_MIN_MARGIN,
    neighbours: int = 5,
    shrinkage: float = 2.0,
    top: int | None = None,
) -> Comparison:
    """Concepts on which `cultures` (default: every culture of the KB) disagree, best-supported splits first.

    `source`: a `Retriever` (its served tuples, so its status and calibration filters apply, and its embedder)
    or a `KnowledgeBase` (every tuple but rejected ones; with `embedder` for semantic alignment, else identical
    strings only). See the module docstring for the alignment and the score. `top` keeps the best `top`.
    """
    if isinstance(min_support, bool) or not isinstance(min_support, int) or min_support < 1:
        raise ConfigError(f"min_support must be an integer >= 1, got {min_support!r}")
    if not -1.0 <= tau <= 1.0:
        raise ConfigError(f"tau must be a cosine similarity between -1 and 1, got {tau!r}")
    if neighbours < 1:
        raise ConfigError(f"neighbours must be >= 1, got {neighbours!r}")
    if shrinkage < 0:
        raise ConfigError(f"shrinkage must be >= 0, got {shrinkage!r}")
    if top is not None and top < 0:
        raise ConfigError(f"top must be >= 0 or None, got {top!r}")
    kb, tuples_of, emb = _source(source, embedder)
    chosen = _cultures(kb, tuples_of, cultures)
    pools = {c: [t for t in tuples_of(c) if t.support >= min_support] for c in chosen}
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    indistinct: dict[str, set[int]] = {}
    if emb is not None:
        for c, ts in pools.items():
            vectors[c] = _unit(emb.encode([t.concept for t in ts])) if ts else np.zeros((0, 1), np.float32)
            indistinct[c] = _indistinct(vectors[c])
    found: list[Disagreement] = []
    every: list[tuple[KnowledgeTuple, KnowledgeTuple, AlignKind, float, float | None]] = []
    aligned: dict[str, int] = {}
    for ca, cb in itertools.combinations(chosen, 2):
        pairs = _align(pools[ca], pools[cb], vectors.get(ca), vectors.get(cb), indistinct.get(ca, set()),
                       indistinct.get(cb, set()), tau, min_margin, neighbours)
        aligned[f"{ca}/{cb}"] = len(pairs)
        every.extend(pairs)
        for ta, tb, kind, sim, margin in pairs:
            if ta.label == tb.label:
                continue
            jsd = js_divergence(ta.distribution, tb.distribution)
            m = min(ta.support, tb.support)
            score = jsd * m / (m + shrinkage) if m + shrinkage > 0 else jsd
            found.append(Disagreement(ta, tb, kind, sim, margin, jsd, score))
    found.sort(key=lambda d: (-d.score, -d.similarity, d.a.culture, d.b.culture, d.a.concept, d.b.concept))
    priors = kb.label_prior()
    return Comparison(
        cultures=tuple(chosen),
        disagreements=found if top is None else found[:top],
        aligned=aligned,
        compared={c: len(ts) for c, ts in pools.items()},
        indistinct={c: len(indistinct.get(c, ())) for c in chosen} if emb is not None else {},
        settings={"min_support": min_support, "tau": tau, "min_margin": min_margin, "neighbours": neighbours,
                  "shrinkage": shrinkage, "embedder": getattr(emb, "id", None), "kb_version": kb.version,
                  "tie_break": kb_tie_break(kb)},
        labels=tuple(kb.scheme.labels),
        priors={c: priors.get(c, {}) for c in chosen},
        alignments=every,
    )


def _source(source: Retriever | KnowledgeBase, embedder: Embedder | None) -> tuple[
        KnowledgeBase, Any, Embedder | None]:
    if isinstance(source, Retriever):
        return source.kb, source.served, embedder or source.embedder
    if isinstance(source, KnowledgeBase):
        def served(culture: str) -> list[KnowledgeTuple]:
            return [t for t in source.for_culture(culture) if t.status != "rejected"]

        return source, served, embedder
    raise ConfigError(f"compare_cultures needs a Retriever or a KnowledgeBase, got {type(source).__name__}")


def _cultures(kb: KnowledgeBase, tuples_of: Any, cultures: Sequence[str] | None) -> list[str]:
    present = sorted(set(kb.cultures) | {t.culture for t in kb.tuples})
    if cultures is None:
        chosen = present
    else:
        if isinstance(cultures, str):
            raise ConfigError(f"cultures must be a list of culture ids, not one string ({cultures!r})")
        chosen = []
        for name in cultures:
            cid = name if name in present else kb.culture(name).id
            if cid not in present:
                raise ConfigError(f"culture {name!r} is not in this KB; its cultures are: {', '.join(present)}")
            chosen.append(cid)
        chosen = list(dict.fromkeys(chosen))
    if len(chosen) < 2:
        raise ConfigError(
            f"comparing cultures needs at least two; got {', '.join(chosen) or 'none'} "
            f"(KB cultures: {', '.join(present)})"
        )
    return chosen


def _unit(vectors: Any) -> npt.NDArray[np.float32]:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _indistinct(v: npt.NDArray[np.float32]) -> set[int]:
    """Rows whose vector is a near copy of another row's (the embedder cannot tell those concepts apart)."""
    if len(v) < 2:
        return set()
    sims = v @ v.T
    np.fill_diagonal(sims, -1.0)
    return {int(i) for i in np.nonzero((sims >= INDISTINCT_COS).any(axis=1))[0]}


_Pair = tuple[KnowledgeTuple, KnowledgeTuple, AlignKind, float, float | None]


def _align(
    ta: list[KnowledgeTuple], tb: list[KnowledgeTuple], va: npt.NDArray[np.float32] | None,
    vb: npt.NDArray[np.float32] | None, skip_a: set[int], skip_b: set[int], tau: float, min_margin: float | None,
    neighbours: int,
) -> list[_Pair]:
    """Aligned tuple pairs of two cultures: identical concepts first, then CSLS mutual nearest neighbours."""
    index_b = {t.concept: j for j, t in enumerate(tb)}
    pairs: list[_Pair] = []
    used_a: set[int] = set()
    used_b: set[int] = set()
    for i, t in enumerate(ta):
        j = index_b.get(t.concept)
        if j is not None:
            pairs.append((t, tb[j], "same string", 1.0, None))
            used_a.add(i)
            used_b.add(j)
    if va is None or vb is None:
        return pairs
    rows = [i for i in range(len(ta)) if i not in used_a and i not in skip_a]
    cols = [j for j in range(len(tb)) if j not in used_b and j not in skip_b]
    if not rows or not cols:
        return pairs
    sims = va[rows] @ vb[cols].T
    k_a, k_b = min(neighbours, len(cols)), min(neighbours, len(rows))
    r_a = np.sort(sims, axis=1)[:, -k_a:].mean(axis=1)  # mean cosine of each a-concept to its nearest b-concepts
    r_b = np.sort(sims, axis=0)[-k_b:, :].mean(axis=0)
    csls = 2 * sims - r_a[:, None] - r_b[None, :]
    best_b = csls.argmax(axis=1)
    best_a = csls.argmax(axis=0)
    for x, y in enumerate(best_b):
        y = int(y)
        if int(best_a[y]) != x:
            continue
        cos, margin = float(sims[x, y]), float(csls[x, y])
        if cos < tau or (min_margin is not None and margin < min_margin):
            continue
        pairs.append((ta[rows[x]], tb[cols[y]], "semantic", cos, margin))
    return pairs


def render_comparison_markdown(comparison: Comparison, top: int = 10, show_priors: bool = True) -> str:
    """A Markdown table of the best `top` disagreements, with what was aligned and each culture's prior."""
    c = comparison
    s = c.settings
    labels = list(c.labels)
    tie_break = s.get("tie_break")
    lines = [
        f"Cultures {', '.join(c.cultures)}; tuples with support >= {s.get('min_support')} per culture: "
        + ", ".join(f"{k} {v}" for k, v in c.compared.items()) + ".",
        "Aligned concept pairs per culture pair (same string or semantic): "
        + (", ".join(f"{k} {v}" for k, v in c.aligned.items() if v) or "none") + f"; {len(c.disagreements)} "
        "with different dominant emotions.",
    ]
    if s.get("embedder"):
        lines.append(f"Semantic alignment by {s['embedder']}: cosine >= {s['tau']:.2f}, mutual nearest neighbours "
                     f"by CSLS (neighbours {s['neighbours']}), CSLS >= {s['min_margin']}.")
        skipped = {k: v for k, v in c.indistinct.items() if v}
        if skipped:
            lines.append("Concepts the embedder cannot tell apart (same string only): "
                         + ", ".join(f"{k} {v}" for k, v in skipped.items()) + ".")
    else:
        lines.append("No embedder: concepts aligned by identical strings only.")
    if show_priors and c.priors:
        lines.append("Each culture's training labels (read a split against them): " + "; ".join(
            f"{k} {_prior_text(p, labels)}" for k, p in c.priors.items()) + ".")
    lines += ["", "| concept (culture) | distribution (support) | concept (culture) | distribution (support) | "
              "aligned by | JSD | score |", "|---|---|---|---|---|---:|---:|"]
    for d in c.disagreements[:top]:
        lines.append(
            f"| {d.a.concept} ({d.a.culture}) | {tuple_summary(d.a, k=3, order=labels, tie_break=tie_break)} "
            f"| {d.b.concept} ({d.b.culture}) | {tuple_summary(d.b, k=3, order=labels, tie_break=tie_break)} "
            f"| {_kind_text(d)} | {d.jsd:.3f} | {d.score:.3f} |"
        )
    if not c.disagreements:
        lines.append("| (no aligned concept with different dominant emotions) | | | | | | |")
    return "\n".join(lines)


def _kind_text(d: Disagreement) -> str:
    if d.kind == "same string":
        return "same string"
    return f"semantic (cos {d.similarity:.2f}, CSLS {d.margin:.2f})"


def _prior_text(prior: Mapping[str, float], labels: Sequence[str]) -> str:
    top = sorted(((lab, p) for lab, p in prior.items() if p > 0), key=lambda x: (-x[1], labels.index(x[0])
                                                                                 if x[0] in labels else 0))[:2]
    return ", ".join(f"{lab} {p:.2f}" for lab, p in top)
