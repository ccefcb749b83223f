"""The calibrated KB prior: how retrieved concepts' evidence is combined with a culture's label prior.

For a sample of culture c whose concepts retrieved tuples t_1..t_k (match scores s_i; see docs/knowledge-model.md)::

    p_i(e)      = (n_i(e) + alpha * pi_src(e)) / (N_i + alpha)          Dirichlet shrinkage (support N_i)
    E(e)        = sum_i w_i * log(p_i(e) / pi_src(e))   with w_i = s_i ** gamma      ("sum" pooling)
                  or that sum divided by sum_i w_i                                 ("mean" pooling)
    log q(e)    = log pi_c(e) + beta * E(e) + const                                 (log-linear pooling)

pi_c is the target culture's training label prior, pi_src the prior of the culture a tuple comes from (the same
culture in `know`; another in `cross-culture-know`), so each tuple contributes its concept's likelihood ratio, and
a concept whose distribution equals its culture's prior contributes nothing. beta = 0 is the prior alone (the
majority class); the fit includes it, and picks a setting with evidence only when that setting is at least as
accurate as the prior on the valid split and on every sample it was fitted on (and has the lowest log-loss among
those), so the chosen predictor is never worse than the culture prior on the data it was fitted on. Without a valid
split (many real sets have only train and test) the fit uses the training samples alone, each left out of the tuples
it supports (exact for Eq. 1), which is what every build does by default (`culturekb.workflows.calibrate`).

The concept filter (`min_support`, `min_informativeness`) is fitted with the weights: a tuple below either is hidden
from retrieval (`culturekb.retrieval.filters.TupleFilter`), so a query concept falls through to the next match.

`fit_calibration` retrieves once for the valid split (exact and semantic matches with alternatives), then scores
every grid setting with numpy: the grid is small and the fit takes well under a second on the shipped data.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from culturekb.errors import ConfigError, DataError
from culturekb.kb.calibration import Calibration
from culturekb.kb.distribution import informativeness
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.kb.store import KnowledgeBase
from culturekb.retrieval.filters import TupleFilter
from culturekb.retrieval.retriever import Retriever

__all__ = ["DEFAULT_GRID", "UNCALIBRATED", "PriorModel", "fit_calibration", "smoothed_prior", "dropped_summary"]

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]

DEFAULT_GRID: dict[str, tuple[Any, ...]] = {
    "min_support": (1, 2, 3, 5),
    "min_informativeness": (0.0, 0.5, 1.0, 2.0, 4.0),
    "alpha": (0.5, 2.0, 8.0),
    "beta": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
    "gamma": (1.0, 4.0),
    "pool": ("mean", "sum"),
}
"""The settings `fit_calibration` tries (every combination; beta 0 is the prior alone)."""

MAX_TUPLES = 5
"""Tuples per sample the KB prior combines: the knowledge block's default budget (`Budget.max_tuples`)."""

_ALTERNATIVES = 8
"""Matches per query concept fetched for the fit, so a filtered-out match falls through to the next one."""


@dataclass(frozen=True)
class PriorModel:
    """The weights of the log-linear pooling (see the module docstring)."""

    alpha: float = 2.0
    beta: float = 1.0
    gamma: float = 1.0
    pool: str = "mean"
    prior_only_cultures: frozenset[str] = frozenset()
    """Cultures predicted from their prior alone (their evidence did not help on valid)."""

    def __post_init__(self) -> None:
        if self.alpha < 0 or self.beta < 0 or self.gamma < 0 or self.pool not in ("mean", "sum"):
            raise ConfigError(f"invalid KB-prior weights {self}: alpha, beta, gamma >= 0 and pool 'mean' or 'sum'")

    @classmethod
    def from_calibration(cls, cal: Calibration) -> PriorModel:
        """The weights a calibration chose."""
        return cls(cal.alpha, cal.beta, cal.gamma, cal.pool, frozenset(cal.prior_only_cultures))

    def log_ratio(self, t: KnowledgeTuple, prior_src: FloatArray, labels: Sequence[str]) -> FloatArray:
        """log(p_t(e) / pi_src(e)) over `labels`, with p_t shrunk toward pi_src by alpha."""
        n = float(t.support)
        dist = np.array([t.distribution.get(lab, 0.0) for lab in labels], dtype=np.float64)
        post = (n * dist + self.alpha * prior_src) / (n + self.alpha) if n + self.alpha > 0 else prior_src
        return np.log(np.maximum(post, 1e-12)) - np.log(prior_src)

    def combine(self, prior: FloatArray, ratios: Sequence[FloatArray], scores: Sequence[float],
                culture: str | None = None) -> FloatArray:
        """q(e): the target prior times the pooled likelihood ratios, normalised (the prior alone for a culture in
        `prior_only_cultures`)."""
        logq = np.log(prior).copy()
        if ratios and self.beta > 0 and culture not in self.prior_only_cultures:
            w = np.array([max(s, 0.0) ** self.gamma for s in scores], dtype=np.float64)
            ev = (w[:, None] * np.vstack(ratios)).sum(axis=0)
            if self.pool == "mean":
                ev = ev / max(float(w.sum()), 1e-12)
            logq = logq + self.beta * ev
        logq -= logq.max()
        q = np.exp(logq)
        return np.asarray(q / q.sum(), dtype=np.float64)


UNCALIBRATED = PriorModel()
"""The weights used when a KB has no calibration: moderate shrinkage, evidence at full weight."""


def smoothed_prior(kb: KnowledgeBase) -> dict[str, FloatArray]:
    """Per culture, the label prior as an array over the scheme's labels, with add-0.5 smoothing of the recorded
    counts so that no label has probability 0 (the argmax, the majority class, is unchanged)."""
    labels = list(kb.scheme.labels)
    recorded = kb.extra_counts.get("label_prior")
    out: dict[str, FloatArray] = {}
    for c, dist in kb.label_prior().items():
        counts = recorded.get(c) if isinstance(recorded, dict) else None
        if isinstance(counts, dict) and counts:
            raw = np.array([float(counts.get(lab, 0)) for lab in labels]) + 0.5
        else:
            raw = np.array([dist[lab] for lab in labels]) + 1e-3
        out[c] = raw / raw.sum()
    return out


# -- the fit -------------------------------------------------------------------------------------------------------
@dataclass
class _ValidSet:
    """What the fit needs of its samples (the valid split, then any left-out training samples), retrieved once."""

    golds: npt.NDArray[np.int64]
    priors: FloatArray                      # (S, L) target-culture prior per sample
    candidates: list[list[list[tuple[int, float]]]]  # per sample, per concept: (tuple index, score) best first
    tuples: list[KnowledgeTuple]
    cultures: list[str]
    is_valid: npt.NDArray[np.bool_]          # (S,) True for valid samples, False for left-out training samples


def _leave_out(t: KnowledgeTuple, label: str) -> KnowledgeTuple | None:
    """The tuple as a build without one sample labelled `label` would have made it (None: it would not exist)."""
    counts = {lab: p * t.support for lab, p in t.distribution.items()}
    counts[label] = max(0.0, counts.get(label, 0.0) - 1.0)
    n = t.support - 1
    if n < 1:
        return None
    dist = {lab: c / n for lab, c in counts.items()}
    return t.model_copy(update={"support": n, "distribution": dist, "label": max(dist, key=dist.__getitem__)})


def _valid_set(retriever: Retriever, concepts: Sequence[Sequence[str]], samples: Sequence[Sample],
               priors: Mapping[str, FloatArray], members: Sequence[Collection[str] | None],
               prior_counts: Mapping[str, Mapping[str, float]], build_min_support: int) -> _ValidSet:
    """Retrieve for every sample; a training sample (its `members`: the concepts the build counted for it) sees
    each tuple it supports with itself left out, and its culture's prior without its own label."""
    labels = list(retriever.kb.scheme.labels)
    index: dict[str, int] = {}
    tuples: list[KnowledgeTuple] = []
    hidden = KnowledgeTuple(concept="(left out)", culture="", label=labels[0], distribution={labels[0]: 1.0},
                            support=1, status="rejected")  # stands for a tuple the left-out build would not have

    def slot(key: str, t: KnowledgeTuple) -> int:
        if key not in index:
            index[key] = len(tuples)
            tuples.append(t)
        return index[key]

    rows = retriever.lookup_many([(list(cs), s.culture) for s, cs in zip(samples, concepts, strict=True)],
                                 k=_ALTERNATIVES, on_invalid="skip")
    candidates: list[list[list[tuple[int, float]]]] = []
    prior_rows = []
    for s, row, own in zip(samples, rows, members, strict=True):
        culture = retriever.resolve_culture(s.culture)
        per_sample: list[list[tuple[int, float]]] = []
        for m in row:
            if m is None:
                continue
            cands = []
            for x in (m, *m.alternatives):
                t = x.tuple
                if own is not None and t.culture == culture and t.concept in own:
                    left = _leave_out(t, str(s.label))
                    key = f"{t.id}::without::{s.label}"
                    i = slot(key, left if left is not None and left.support >= build_min_support else hidden)
                else:
                    i = slot(t.id, t)
                cands.append((i, float(x.score)))
            per_sample.append(cands)
        candidates.append(per_sample)
        counts = prior_counts.get(culture)
        if own is not None and counts:
            raw = np.array([float(counts.get(lab, 0)) for lab in labels])
            raw[labels.index(str(s.label))] -= 1.0
            raw = np.maximum(raw, 0.0) + 0.5
            prior_rows.append(raw / raw.sum())
        else:
            prior_rows.append(priors[culture])
    golds = np.array([labels.index(str(s.label)) for s in samples], dtype=np.int64)
    return _ValidSet(golds, np.vstack(prior_rows), candidates, tuples, [s.culture for s in samples],
                     np.array([own is None for own in members], dtype=bool))


def _select(cands: Sequence[Sequence[tuple[int, float]]], visible: npt.NDArray[np.bool_]) -> list[tuple[int, float]]:
    """Per concept the first visible candidate; one entry per tuple (its best score); the best MAX_TUPLES."""
    best: dict[int, float] = {}
    for chain in cands:
        for i, s in chain:
            if visible[i]:
                if s > best.get(i, -1.0):
                    best[i] = s
                break
    return sorted(best.items(), key=lambda x: -x[1])[:MAX_TUPLES]


def _sample_losses(vs: _ValidSet, logq: FloatArray) -> FloatArray:
    """Each sample's negative log-probability of its gold label under unnormalised log-probabilities."""
    norm = logq - logq.max(axis=1, keepdims=True)
    logp = norm - np.log(np.exp(norm).sum(axis=1, keepdims=True))
    return np.asarray(-logp[np.arange(len(vs.golds)), vs.golds], dtype=np.float64)


def _scores(vs: _ValidSet, logq: FloatArray) -> tuple[float, float]:
    """(accuracy, mean log-loss) of per-sample log-probabilities; ties go to the earlier label."""
    acc = float((logq.argmax(axis=1) == vs.golds).mean())
    return acc, float(_sample_losses(vs, logq).mean())


def _accuracy(vs: _ValidSet, logq: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    return float((logq[mask].argmax(axis=1) == vs.golds[mask]).mean()) if mask.any() else math.nan


def fit_calibration(
    retriever: Retriever,
    samples: Sequence[Sample],
    concepts: Sequence[Sequence[str]],
    *,
    left_out: Sequence[tuple[Sample, Sequence[str], Collection[str]]] = (),
    grid: Mapping[str, Sequence[Any]] | None = None,
    fitted_on: Mapping[str, Any] | None = None,
) -> Calibration:
    """Choose the concept filter and the KB-prior weights (see the module docstring).

    `samples`: the labelled valid split, with their test-time `concepts`. `left_out`: labelled training samples as
    (sample, test-time concepts, the concepts the build counted for it); each is scored against the KB with itself
    left out of every tuple it supports and of its culture's prior (exact leave-one-out of Eq. 1), which adds
    honest held-out samples to a small valid split. The rule: the lowest log-loss over all these samples among the
    settings at least as accurate as the prior on the valid split and on all samples."""
    kb = retriever.kb
    labels = list(kb.scheme.labels)
    labelled = [(s, cs, None) for s, cs in zip(samples, concepts, strict=True) if s.label is not None]
    extra = [(s, cs, frozenset(own)) for s, cs, own in left_out if s.label is not None]
    if not labelled and not extra:
        raise DataError("no labelled samples to calibrate on: the data needs a 'valid' split with labels, or the KB's "
                        "training samples (to leave each one out)")
    everything: list[tuple[Sample, Sequence[str], Collection[str] | None]] = [*labelled, *extra]
    unknown = sorted({str(s.label) for s, _, _ in everything if s.label not in labels})
    if unknown:
        raise DataError(f"labels {unknown} are not in the KB's scheme {kb.scheme.name!r}: {labels}")
    g = {**DEFAULT_GRID, **(grid or {})}
    priors = smoothed_prior(kb)
    recorded = kb.extra_counts.get("label_prior")
    vs = _valid_set(retriever, [cs for _, cs, _ in everything], [s for s, _, _ in everything], priors,
                    [own for _, _, own in everything], recorded if isinstance(recorded, dict) else {},
                    int(kb.build_config.get("min_support", 1) or 1))
    n_t = len(vs.tuples)
    raw_prior = kb.label_prior()
    support = np.array([t.support for t in vs.tuples], dtype=np.int64)
    info = np.array([informativeness(t.distribution, t.support, raw_prior.get(t.culture, {}))
                     for t in vs.tuples], dtype=np.float64)
    allowed = np.array([retriever.tuple_filter.reason(t) is None for t in vs.tuples], dtype=bool)
    log_prior = np.log(vs.priors)
    everyone = np.ones(len(vs.golds), dtype=bool)
    base_valid, base_all = _accuracy(vs, log_prior, vs.is_valid), _accuracy(vs, log_prior, everyone)
    _, base_loss = _scores(vs, log_prior)
    ratio_cache: dict[float, FloatArray] = {}
    zero = np.zeros(len(labels))

    def ratios(alpha: float) -> FloatArray:
        if alpha not in ratio_cache:
            m = PriorModel(alpha=alpha)
            ratio_cache[alpha] = (np.vstack([m.log_ratio(t, priors[t.culture], labels) if t.culture in priors
                                             else zero for t in vs.tuples]) if n_t else np.zeros((0, len(labels))))
        return ratio_cache[alpha]

    def evidence(ms: int, mi: float, alpha: float, gamma: float, pool: str) -> tuple[FloatArray, float]:
        visible = allowed & (support >= ms) & (info >= mi)
        chosen = [_select(c, visible) for c in vs.candidates]
        r = ratios(alpha)
        ev = np.zeros_like(log_prior)
        for k, picks in enumerate(chosen):
            if picks:
                idx = np.array([i for i, _ in picks])
                w = np.array([s for _, s in picks]) ** gamma
                e = (w[:, None] * r[idx]).sum(axis=0)
                ev[k] = e / max(float(w.sum()), 1e-12) if pool == "mean" else e
        return ev, sum(bool(c) for c in chosen) / len(chosen)

    has_valid = bool(vs.is_valid.any())

    def admissible(logq: FloatArray) -> bool:  # never less accurate than the prior, on valid and on everything
        return ((not has_valid or _accuracy(vs, logq, vs.is_valid) + 1e-12 >= base_valid)
                and _accuracy(vs, logq, everyone) + 1e-12 >= base_all)

    tried: list[dict[str, Any]] = []
    best: tuple[tuple[float, float, int], dict[str, Any]] | None = None
    for ms, mi, alpha, gamma, pool in itertools.product(g["min_support"], g["min_informativeness"], g["alpha"],
                                                        g["gamma"], g["pool"]):
        ev, covered = evidence(ms, mi, alpha, gamma, pool)
        for beta in g["beta"]:
            logq = log_prior + beta * ev
            acc, loss = _scores(vs, logq)
            setting = {"min_support": ms, "min_informativeness": mi, "alpha": alpha, "beta": beta,
                       "gamma": gamma, "pool": pool, "accuracy": round(acc, 6),
                       "valid_accuracy": round(_accuracy(vs, logq, vs.is_valid), 6), "log_loss": round(loss, 6),
                       "coverage": round(covered, 6)}
            tried.append(setting)
            if not admissible(logq):
                continue
            # lowest log-loss; then higher accuracy; then the simpler (prior-only) setting
            key = (round(loss, 9), -acc, 0 if beta == 0 else 1)
            if best is None or key < best[0]:
                best = (key, setting)
    assert best is not None  # beta 0 always qualifies
    chosen_setting = best[1]
    prior_only: list[str] = []
    logq = log_prior
    if chosen_setting["beta"] == 0:
        chosen_setting = {**chosen_setting, "min_support": 1, "min_informativeness": 0.0}
    else:
        # per culture: where the evidence made the log-loss worse than the culture's own prior, keep the prior
        ev, _ = evidence(*(chosen_setting[k] for k in ("min_support", "min_informativeness", "alpha", "gamma",
                                                        "pool")))
        logq = log_prior + chosen_setting["beta"] * ev
        losses = _sample_losses(vs, logq)
        losses_prior = _sample_losses(vs, log_prior)
        cultures = np.array(vs.cultures)
        prior_only = sorted(c for c in set(vs.cultures)
                            if losses[cultures == c].mean() > losses_prior[cultures == c].mean())
        fallback = log_prior + chosen_setting["beta"] * ev * ~np.isin(cultures, prior_only)[:, None]
        if prior_only and admissible(fallback):
            logq = fallback
        else:
            prior_only = []
    acc, mean_loss = _scores(vs, logq)
    cultures_of = Counter(vs.cultures[i] for i in np.flatnonzero(vs.is_valid))
    cal = Calibration(
        kb_version=kb.version,
        min_support=int(chosen_setting["min_support"]),
        min_informativeness=float(chosen_setting["min_informativeness"]),
        alpha=float(chosen_setting["alpha"]), beta=float(chosen_setting["beta"]),
        gamma=float(chosen_setting["gamma"]), pool=chosen_setting["pool"],
        prior_only_cultures=prior_only,
        fitted_on={"split": "valid" if labelled else None, "samples": len(labelled),
                   "per_culture": dict(sorted(cultures_of.items())), "left_out_training_samples": len(extra),
                   "left_out_per_culture": dict(sorted(Counter(s.culture for s, _, _ in extra).items())),
                   "status": retriever.tuple_filter.status, **(fitted_on or {})},
        valid={"prior_accuracy": _rounded(base_valid), "accuracy": _rounded(_accuracy(vs, logq, vs.is_valid)),
               "left_out_prior_accuracy": round(_accuracy(vs, log_prior, ~vs.is_valid), 6) if extra else None,
               "left_out_accuracy": round(_accuracy(vs, logq, ~vs.is_valid), 6) if extra else None,
               "prior_log_loss": _rounded(_masked_mean(_sample_losses(vs, log_prior), vs.is_valid)),
               "log_loss": _rounded(_masked_mean(_sample_losses(vs, logq), vs.is_valid)),
               "fit_prior_log_loss": round(base_loss, 6), "fit_log_loss": round(mean_loss, 6),
               "fit_accuracy": round(acc, 6), "coverage": chosen_setting["coverage"],
               "settings_tried": len(tried), "fell_back_to_prior": chosen_setting["beta"] == 0},
        grid=tried,
    )
    tf = TupleFilter(retriever.tuple_filter.status, cal.min_support, cal.min_informativeness)
    return cal.model_copy(update={"dropped": dropped_summary(kb, tf)})


def _rounded(x: float) -> float | None:
    """`x` to 6 places, None for NaN (a figure over no sample, e.g. valid accuracy without a valid split)."""
    return None if math.isnan(x) else round(x, 6)


def _masked_mean(values: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    return float(values[mask].mean()) if mask.any() else math.nan


def dropped_summary(kb: KnowledgeBase, tuple_filter: TupleFilter, examples: int = 12) -> dict[str, Any]:
    """What a filter hides, per reason and culture: counts and the best-supported examples."""
    prior = kb.label_prior()
    by: dict[str, dict[str, list[KnowledgeTuple]]] = {}
    for t in kb.tuples:
        why = tuple_filter.reason(t, prior.get(t.culture))
        if why is not None:
            by.setdefault(why, {}).setdefault(t.culture, []).append(t)
    out: dict[str, Any] = {"filter": tuple_filter.describe(), "total": sum(
        len(ts) for per in by.values() for ts in per.values()), "of": len(kb), "reasons": {}}
    for why, per in sorted(by.items()):
        out["reasons"][why] = {
            c: {"count": len(ts),
                "examples": [f"{t.concept} (n={t.support}, {t.label})"
                             for t in sorted(ts, key=lambda t: (-t.support, t.concept))[:examples]]}
            for c, ts in sorted(per.items())}
    return out

