"""``culturekb eval knowledge``: how good a KB's knowledge is on a labelled split, and whether it helps.

For a KB and a data file with a split column (default: the test split), per culture and overall:

1. **coverage**: the share of samples that got at least one tuple in ``know``, split into samples with an exact
   concept match and samples whose tuples were all found by embedding similarity (semantic only);
2. **hit precision**: among the tuples given to a sample, the share whose dominant emotion is the sample's gold
   label (per tuple and per sample), for ``know`` beside the tuples ``random-know`` and ``cross-culture-know`` give;
3. **calibration**: a reliability diagram and the expected calibration error of the predicted label's probability
   (`Prediction.probabilities`; a predictor without them counts as sure, one-hot), Brier score and log-loss when
   probabilities exist;
4. **accuracy** of the predictor (the offline kb-prior) in ``orig``, ``know``, ``random-know``,
   ``cross-culture-know`` and of the train split's per-culture majority class, each with a percentile-bootstrap
   interval, and the paired differences know minus each of them with a paired bootstrap interval and an exact
   McNemar test;
5. the **concepts that helped and hurt** most: know right and orig wrong on a sample the concept was used for, and
   the reverse;
6. **annotator agreement** where samples carry their annotators' labels (``metadata["annotator_labels"]``, a list,
   or ``metadata["label_counts"]``, label -> count, as the ArtEmis/ArtELingo loader keeps them): Jensen-Shannon
   divergence between the predicted (or retrieved) distribution and the annotators' empirical one, and top-1
   agreement with the annotators' majority.

The statistics are pure functions here and in `culturekb.evals.stats`; ``docs/knowledge-report.md`` explains
every table and figure of the report (``knowledge.json``, ``knowledge.md`` and the PNGs). (Why a little over 500
lines: the six sections' definitions sit beside the runner that joins them, so one file says what the report
measures.)
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from culturekb.errors import ConfigError
from culturekb.evals.context import RunContext
from culturekb.evals.knowledge.command import knowledge_options
from culturekb.evals.knowledge.spec import KnowledgeSpec, check_report_numbers
from culturekb.evals.loaders import require_labelled_split
from culturekb.evals.metrics import align_predictions, majority_labels
from culturekb.evals.reports import Plot, Table
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.evals.stats import (
    Interval,
    bootstrap_interval,
    brier_score,
    correctness,
    expected_calibration_error,
    log_loss,
    mcnemar_exact,
    paired_bootstrap_difference,
    reliability_bins,
)
from culturekb.inference.base import Prediction, Predictor
from culturekb.inference.predictors import predictor_client
from culturekb.kb.distribution import js_divergence, normalise
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.retrieval.retriever import Match, Retriever

if TYPE_CHECKING:
    from culturekb.inference.augmenter import Augmenter

__all__ = [
    "KNOWLEDGE_MODES",
    "MAJORITY",
    "KnowledgeRunner",
    "annotator_counts",
    "annotator_agreement",
    "calibration_summary",
    "concept_effects",
    "coverage_summary",
    "hit_precision",
]

log = logging.getLogger(__name__)

KNOWLEDGE_MODES: tuple[str, ...] = ("orig", "know", "random-know", "cross-culture-know")
"""The predictor's modes the report runs (``internal-know`` is the same as ``orig`` for the KB prior)."""
MAJORITY = "majority"
"""The train split's per-culture majority class, the baseline beside the modes."""
COMPARED: tuple[str, ...] = ("orig", "random-know", "cross-culture-know", MAJORITY)
"""Know is compared with each of these (know minus X)."""
ONE_CULTURE = "n/a (one culture)"
NO_TRAIN = "n/a (no train split in the data)"
_CONFIDENCE_SOURCES = {"probabilities": "the predictor's probabilities",
                       "one-hot": "one-hot (the predictor gives no probabilities)",
                       "mixed": "the predictor's probabilities where given, else one-hot"}
MIN_ANNOTATORS = 2
"""A sample needs this many annotator labels for its empirical distribution to count."""


# -- the sections, as pure functions ------------------------------------------------------------------------------


def _share(part: float, whole: float) -> float:
    return part / whole if whole else math.nan


def coverage_summary(used: Sequence[Sequence[str]], kinds: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """Coverage of samples by retrieved tuples: `used` is, per sample, the ids of the tuples its ``know`` prediction
    used; `kinds` maps, per sample, a tuple id to how it was matched (``exact`` or ``semantic``).

    A sample is covered when it used a tuple; ``exact`` when one of them was an exact match, ``semantic_only`` when
    all were semantic. A tuple whose kind is not known counts in ``other_tuples``.
    """
    if len(used) != len(kinds):
        raise ConfigError(f"coverage_summary: {len(used)} tuple lists but {len(kinds)} match-kind maps")
    n = len(used)
    covered = exact = semantic_only = 0
    per_kind: Counter[str] = Counter()
    for ids, kind_of in zip(used, kinds, strict=True):
        if not ids:
            continue
        covered += 1
        ks = [kind_of.get(i, "other") for i in ids]
        per_kind.update(ks)
        if "exact" in ks:
            exact += 1
        elif all(k == "semantic" for k in ks):
            semantic_only += 1
    n_tuples = sum(per_kind.values())
    return {
        "n": n, "covered": covered, "share": _share(covered, n),
        "exact": exact, "share_exact": _share(exact, n),
        "semantic_only": semantic_only, "share_semantic_only": _share(semantic_only, n),
        "tuples": n_tuples, "exact_tuples": per_kind["exact"], "semantic_tuples": per_kind["semantic"],
        "other_tuples": n_tuples - per_kind["exact"] - per_kind["semantic"],
        "tuples_per_covered": _share(n_tuples, covered),
    }


def hit_precision(used: Sequence[Sequence[str]], golds: Sequence[str], tuples_by_id: Mapping[str, KnowledgeTuple]
                  ) -> dict[str, Any]:
    """How often a given tuple's dominant emotion is the sample's gold label.

    ``per_tuple``: hits over all (sample, tuple) pairs; ``per_sample``: the mean over samples with tuples of each
    sample's share of hits; ``any_hit``: the share of those samples with at least one hit. An id the KB does not
    hold raises ConfigError (the predictions come from another KB).
    """
    if len(used) != len(golds):
        raise ConfigError(f"hit_precision: {len(used)} tuple lists but {len(golds)} gold labels")
    n_tuples = hits = samples = any_hit = 0
    shares: list[float] = []
    for ids, gold in zip(used, golds, strict=True):
        if not ids:
            continue
        unknown = [i for i in ids if i not in tuples_by_id]
        if unknown:
            raise ConfigError(f"hit_precision: tuples {unknown[:3]} are not in the KB; the predictions were made "
                              "with another KB (use a fresh output folder)")
        h = sum(1 for i in ids if tuples_by_id[i].label == gold)
        n_tuples += len(ids)
        hits += h
        samples += 1
        any_hit += h > 0
        shares.append(h / len(ids))
    return {"tuples": n_tuples, "hits": hits, "per_tuple": _share(hits, n_tuples), "samples": samples,
            "per_sample": _share(sum(shares), len(shares)), "any_hit": _share(any_hit, samples)}


def _confidence(p: Prediction) -> float:
    if p.probabilities is None:
        return 1.0
    return float(p.probabilities.get(str(p.label), 0.0))


def calibration_summary(preds: Sequence[Prediction], golds: Sequence[str], labels: Sequence[str], n_bins: int = 10
                        ) -> dict[str, Any]:
    """Reliability bins, ECE, and (when every answered prediction has probabilities) Brier score and log-loss.

    The confidence of a prediction is the probability it gives its own label; a prediction without probabilities
    counts as sure (one-hot: confidence 1). Predictions without a label (invalid answers, failed calls) have no
    confidence and are left out of calibration (counted in ``unanswered``); accuracy counts them as wrong.
    """
    if len(preds) != len(golds):
        raise ConfigError(f"calibration_summary: {len(preds)} predictions but {len(golds)} gold labels")
    answered = [(p, g) for p, g in zip(preds, golds, strict=True) if p.label is not None]
    with_probs = sum(1 for p, _ in answered if p.probabilities is not None)
    source = ("probabilities" if answered and with_probs == len(answered)
              else "one-hot" if with_probs == 0 else "mixed")
    conf = [_confidence(p) for p, _ in answered]
    right = [p.label == g for p, g in answered]
    out: dict[str, Any] = {
        "source": source, "n": len(answered), "unanswered": len(preds) - len(answered),
        "with_probabilities": with_probs,
        "accuracy": _share(sum(right), len(right)), "mean_confidence": _share(sum(conf), len(conf)),
        "ece": expected_calibration_error(conf, right, n_bins),
        "bins": [b.to_dict() for b in reliability_bins(conf, right, n_bins)],
        "brier": None, "log_loss": None,
    }
    if source == "probabilities":
        dists = [p.probabilities or {} for p, _ in answered]
        gs = [g for _, g in answered]
        out["brier"] = brier_score(dists, gs, labels)
        out["log_loss"] = log_loss(dists, gs)
    return out


def concept_effects(used: Sequence[Sequence[str]], know_correct: Sequence[bool], orig_correct: Sequence[bool],
                    tuples_by_id: Mapping[str, KnowledgeTuple], top: int = 10) -> dict[str, Any]:
    """Per tuple used in ``know``: on how many samples it was used, how often it helped (know right, orig wrong)
    and hurt (know wrong, orig right); the `top` concepts of each, with support and dominant label.

    A sample with several tuples credits each of them. Ranks: most helped (then fewest hurt, larger support, id),
    and most hurt (then fewest helped, larger support, id); a concept that never helped is not listed as helping.
    """
    if not len(used) == len(know_correct) == len(orig_correct):
        raise ConfigError("concept_effects: used, know_correct and orig_correct need one entry per sample")
    stats: dict[str, dict[str, int]] = {}
    for ids, k, o in zip(used, know_correct, orig_correct, strict=True):
        for i in dict.fromkeys(ids):
            s = stats.setdefault(i, {"used": 0, "helped": 0, "hurt": 0})
            s["used"] += 1
            s["helped"] += bool(k and not o)
            s["hurt"] += bool(o and not k)

    def row(i: str) -> dict[str, Any]:
        t = tuples_by_id.get(i)
        return {"tuple": i, "concept": t.concept if t else i, "culture": t.culture if t else "",
                "label": t.label if t else None, "support": t.support if t else None, **stats[i],
                "net": stats[i]["helped"] - stats[i]["hurt"]}

    def support(i: str) -> int:
        t = tuples_by_id.get(i)
        return t.support if t else 0

    helped = sorted((i for i in stats if stats[i]["helped"]),
                    key=lambda i: (-stats[i]["helped"], stats[i]["hurt"], -support(i), i))
    hurt = sorted((i for i in stats if stats[i]["hurt"]),
                  key=lambda i: (-stats[i]["hurt"], stats[i]["helped"], -support(i), i))
    return {"concepts": len(stats), "helped": [row(i) for i in helped[:top]], "hurt": [row(i) for i in hurt[:top]],
            "n_helped": len(helped), "n_hurt": len(hurt)}


def annotator_counts(sample: Sample) -> dict[str, int] | None:
    """The labels of a sample's individual annotators as counts: from ``metadata["annotator_labels"]`` (a list) or
    ``metadata["label_counts"]`` (label -> count, kept by the ArtEmis/ArtELingo loader for one-row-per-annotation
    files); None when the sample has neither."""
    labels = sample.metadata.get("annotator_labels")
    if isinstance(labels, list | tuple) and labels:
        return dict(Counter(str(lab) for lab in labels if lab))
    counts = sample.metadata.get("label_counts")
    if isinstance(counts, Mapping) and counts:
        return {str(lab): int(n) for lab, n in counts.items() if int(n) > 0}
    return None


def _argmax_set(dist: Mapping[str, float]) -> set[str]:
    top = max(dist.values()) if dist else 0.0
    return {lab for lab, v in dist.items() if v == top and v > 0}


def annotator_agreement(annotators: Sequence[Mapping[str, int] | None], predicted: Sequence[Mapping[str, float]],
                        predicted_labels: Sequence[str | None], priors: Sequence[Mapping[str, float]]
                        ) -> dict[str, Any]:
    """Agreement of the predicted distributions with the held-out annotators' empirical ones.

    Per sample with at least `MIN_ANNOTATORS` annotator labels: the Jensen-Shannon divergence (bits, in [0, 1])
    between the predicted distribution and the annotators' label shares, the same for the culture prior (the
    baseline a KB should beat), and top-1 agreement: the predicted label is one of the annotators' most frequent
    labels (the prior's most likely label, for the baseline). Means over those samples; ``n`` counts them.
    """
    if not len(annotators) == len(predicted) == len(predicted_labels) == len(priors):
        raise ConfigError("annotator_agreement: give one entry per sample in every argument")
    jsd: list[float] = []
    jsd_prior: list[float] = []
    top1: list[bool] = []
    top1_prior: list[bool] = []
    n_annotators: list[int] = []
    for counts, dist, label, prior in zip(annotators, predicted, predicted_labels, priors, strict=True):
        if counts is None or sum(counts.values()) < MIN_ANNOTATORS:
            continue
        empirical = normalise(counts)
        majority = _argmax_set(counts)
        jsd.append(js_divergence(dist, empirical))
        jsd_prior.append(js_divergence(prior, empirical))
        top1.append(label in majority)
        top1_prior.append(bool(prior) and max(prior, key=lambda k: prior[k]) in majority)
        n_annotators.append(sum(counts.values()))
    n = len(jsd)
    return {"n": n, "mean_annotators": _share(sum(n_annotators), n), "jsd": _share(sum(jsd), n),
            "jsd_prior": _share(sum(jsd_prior), n), "top1": _share(sum(top1), n),
            "top1_prior": _share(sum(top1_prior), n)}


# -- the runner ----------------------------------------------------------------------------------------------------


@register_runner("knowledge")
class KnowledgeRunner(Runner):
    """The knowledge report of a KB on the labelled split of a data file (see the module docstring)."""

    command = RunnerCommand(knowledge_options)
    default_modes = KNOWLEDGE_MODES

    def __init__(
        self,
        samples: Sequence[Sample],
        predictor: Predictor,
        augmenter: Augmenter,
        *,
        split: str = "test",
        n_resamples: int = 2000,
        confidence: float = 0.95,
        seed: int = 0,
        n_bins: int = 10,
        top_concepts: int = 10,
        kb_prior_calibration: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        """`kb_prior_calibration`: how the kb-prior was calibrated (source, weights, concept filter, valid figures),
        recorded in the report."""
        check_report_numbers(n_resamples, confidence, seed, n_bins, top_concepts)
        self.all_samples = list(samples)
        self.augmenter = augmenter
        self.kb = augmenter.retriever.kb
        self.split = split
        self.n_resamples, self.confidence, self.seed = n_resamples, confidence, seed
        self.n_bins, self.top_concepts = n_bins, top_concepts
        self.kb_prior_calibration = dict(kb_prior_calibration) if kb_prior_calibration else None
        kw.setdefault("client", predictor_client(predictor))
        super().__init__(predictor, **kw)

    @property
    def one_culture(self) -> bool:
        """True when the KB serves one culture, so there is no other culture's knowledge to give."""
        return len(self.augmenter.retriever.cultures) < 2

    @classmethod
    def from_context(cls, ctx: RunContext) -> KnowledgeRunner:
        """The labelled split of the spec's data (read before the index opens), predicted by the kb-prior
        calibrated as `eval artemculture` calibrates it (the calibration recorded in the report)."""
        spec = ctx.spec
        assert isinstance(spec, KnowledgeSpec)
        samples = ctx.kb_samples(spec.data)
        require_labelled_split(samples, spec.split)
        predictor, calibration = ctx.predictor(samples)
        return cls(samples, predictor, ctx.augmenter(), split=spec.split, n_resamples=spec.n_resamples,
                   confidence=spec.confidence, seed=spec.seed, n_bins=spec.n_bins, top_concepts=spec.top_concepts,
                   kb_prior_calibration=calibration, limit=spec.limit, progress=spec.progress,
                   load_report=ctx.data_read or None)

    def load(self) -> list[Sample]:
        """The labelled samples of the split."""
        chosen = [s for s in self.all_samples if s.split == self.split and s.label is not None]
        if not chosen:
            raise ConfigError(f"no labelled samples in split {self.split!r}; check the data's split column "
                              "(culturekb splits files without one 8:1:1 by image)")
        return chosen

    def default_settings(self) -> list[Setting]:
        """orig, know, random-know, and cross-culture-know when the KB has two cultures or more."""
        return [Setting(m) for m in KNOWLEDGE_MODES if not (m == "cross-culture-know" and self.one_culture)]

    def config(self) -> dict[str, Any]:
        """The base config plus the KB version, the split and how the retriever looks up (tau, filter)."""
        retriever = self.augmenter.retriever
        tau = retriever.tau
        return {**super().config(), "kb_version": self.kb.version, "split": self.split,
                "retrieval": {"tau": tau, "filter": retriever.tuple_filter}}

    # -- scoring ---------------------------------------------------------------------------------------------------
    def _interval(self, values: Sequence[float]) -> Interval:
        return bootstrap_interval(values, n_resamples=self.n_resamples, confidence=self.confidence, seed=self.seed)

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Every section of the report, overall and per culture (see the module docstring)."""
        preds = {s.key: list(p) for s, p in predictions_by_setting.items()}
        if "know" not in preds or "orig" not in preds:
            raise ConfigError("the knowledge report needs the settings 'orig' and 'know'")
        golds: list[str] = []
        correct: dict[str, list[bool] | None] = {}
        for key, ps in preds.items():
            golds, labels = align_predictions(samples, ps, where=f"knowledge/{key}")
            correct[key] = correctness(labels, golds)
        correct.setdefault("cross-culture-know", None)
        majority = self._train_majority(samples)
        majority_answers = [majority.get(s.culture) for s in samples] if majority is not None else None
        correct[MAJORITY] = correctness(majority_answers, golds) if majority_answers is not None else None
        cultures = sorted({s.culture for s in samples})
        groups = {"overall": list(range(len(samples))),
                  **{c: [i for i, s in enumerate(samples) if s.culture == c] for c in cultures}}
        matches = self._matches(samples)
        tuples_by_id = {t.id: t for t in self.kb.tuples}
        used = {key: [list(p.tuples_used) for p in ps] for key, ps in preds.items()}
        kinds = [{i: m.kind for i, m in found.items()} for found in matches]
        annotators = [annotator_counts(s) for s in samples]
        calibration = {key: calibration_summary(ps, golds, self.kb.scheme.labels, self.n_bins)
                       for key, ps in preds.items()}
        return {
            "split": self.split,
            "n_samples": len(samples),
            "kb_version": self.kb.version,
            "kb_cultures": ", ".join(self.augmenter.retriever.cultures),
            "predictor": getattr(self.predictor, "id", ""),
            "confidences": _CONFIDENCE_SOURCES[calibration["know"]["source"]],
            "per_culture_n": {c: len(groups[c]) for c in cultures},
            "bootstrap": {"n_resamples": self.n_resamples, "confidence": self.confidence, "seed": self.seed},
            "coverage": {g: coverage_summary([used["know"][i] for i in idx], [kinds[i] for i in idx])
                         for g, idx in groups.items()},
            "hit_precision": {g: {key: hit_precision([used[key][i] for i in idx], [golds[i] for i in idx],
                                                     tuples_by_id)
                                  for key in ("know", "random-know", "cross-culture-know") if key in used}
                              for g, idx in groups.items()},
            "calibration": calibration,
            "accuracy": {g: self._accuracy(correct, idx) for g, idx in groups.items()},
            "orig_equals_majority": majority_answers == [p.label for p in preds["orig"]],
            "comparisons": {g: self._comparisons(correct, idx) for g, idx in groups.items()},
            "concepts": concept_effects(used["know"], correct["know"] or [], correct["orig"] or [], tuples_by_id,
                                        self.top_concepts),
            "annotators": self._annotators(samples, annotators, preds["know"], matches, groups),
            "kb_prior_calibration": self.kb_prior_calibration,
        }

    def _lookup_retriever(self) -> Retriever:
        """The retriever the predictor looks up with (the calibrated KB prior serves its calibration's concept
        filter through its own knowledge service), else the augmenter's."""
        own = getattr(getattr(self.predictor, "service", None), "retriever", None)
        return own if isinstance(own, Retriever) else self.augmenter.retriever

    def _matches(self, samples: Sequence[Sample]) -> list[dict[str, Match]]:
        """Per sample, every tuple its test-time concepts match in its culture (id -> match, exact preferred), as
        the predictor's lookup finds them before any budget trims the block: how each used tuple was found."""
        concepts = self.augmenter.concepts_for(samples)
        rows = self._lookup_retriever().lookup_many([(cs, s.culture) for s, cs in zip(samples, concepts, strict=True)],
                                                    on_invalid="skip")
        out: list[dict[str, Match]] = []
        for row in rows:
            found: dict[str, Match] = {}
            for m in row:
                if m is not None and (m.tuple.id not in found or m.kind == "exact"):
                    found[m.tuple.id] = m
            out.append(found)
        return out

    def _train_majority(self, samples: Sequence[Sample]) -> dict[str, str] | None:
        """Train's most frequent label per culture, as the ArtECulture run computes it (None without a train split;
        a culture without training labels gets no prediction and is scored wrong)."""
        train = [s for s in self.all_samples if s.split == "train" and s.label is not None]
        if not train:
            return None
        majority = majority_labels([s.label for s in train], [s.culture for s in train],
                                   order=list(self.kb.scheme.labels))
        unseen = sorted({s.culture for s in samples} - set(majority))
        if unseen:
            log.warning("majority baseline: cultures %s have no training labels; their samples are scored wrong",
                        unseen)
        return majority

    def _accuracy(self, correct: Mapping[str, list[bool] | None], idx: Sequence[int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in (*KNOWLEDGE_MODES, MAJORITY):
            values = correct.get(key)
            if values is None:
                out[key] = {"note": ONE_CULTURE if key == "cross-culture-know" else NO_TRAIN}
                continue
            out[key] = self._interval([float(values[i]) for i in idx]).to_dict()
        return out

    def _comparisons(self, correct: Mapping[str, list[bool] | None], idx: Sequence[int]) -> dict[str, Any]:
        know = correct["know"] or []
        out: dict[str, Any] = {}
        for other in COMPARED:
            values = correct.get(other)
            if values is None:
                out[f"know - {other}"] = {"note": ONE_CULTURE if other == "cross-culture-know" else NO_TRAIN}
                continue
            a, b = [know[i] for i in idx], [values[i] for i in idx]
            diff = paired_bootstrap_difference(a, b, n_resamples=self.n_resamples, confidence=self.confidence,
                                               seed=self.seed)
            out[f"know - {other}"] = {"difference": diff.to_dict(), "mcnemar": mcnemar_exact(a, b).to_dict()}
        return out

    def _annotators(self, samples: Sequence[Sample], annotators: Sequence[Mapping[str, int] | None],
                    know: Sequence[Prediction], matches: Sequence[Mapping[str, Match]],
                    groups: Mapping[str, list[int]]) -> dict[str, Any]:
        """Annotator agreement per group; the predicted distribution is the prediction's probabilities, else the
        match-score-weighted mix of the distributions of the tuples it used, else the culture prior."""
        usable = sum(1 for a in annotators if a is not None and sum(a.values()) >= MIN_ANNOTATORS)
        if not usable:
            return {"available": False, "note": f"no sample of split {self.split!r} carries the labels of at least "
                                                f"{MIN_ANNOTATORS} individual annotators (metadata annotator_labels "
                                                "or label_counts), so agreement with annotators is not measured"}
        priors = self.kb.label_prior()
        labels = list(self.kb.scheme.labels)
        predicted: list[dict[str, float]] = []
        sources: Counter[str] = Counter()
        tuples_by_id = {t.id: t for t in self.kb.tuples}
        for s, p, found in zip(samples, know, matches, strict=True):
            prior = priors.get(s.culture) or {lab: 1 / len(labels) for lab in labels}
            given = [i for i in p.tuples_used if i in tuples_by_id]
            if p.probabilities:
                predicted.append(normalise(p.probabilities, labels))
                sources["probabilities"] += 1
            elif given:
                mix: dict[str, float] = {lab: 0.0 for lab in labels}
                for i in given:
                    w = found[i].score if i in found else 1.0
                    for lab in labels:
                        mix[lab] += w * float(tuples_by_id[i].distribution.get(lab, 0.0))
                predicted.append(normalise(mix, labels))
                sources["retrieved mix"] += 1
            else:
                predicted.append(dict(prior))
                sources["culture prior"] += 1
        sample_priors = [priors.get(s.culture) or {} for s in samples]
        pred_labels = [p.label for p in know]
        return {
            "available": True, "min_annotators": MIN_ANNOTATORS, "sources": dict(sources),
            "groups": {g: annotator_agreement([annotators[i] for i in idx], [predicted[i] for i in idx],
                                              [pred_labels[i] for i in idx], [sample_priors[i] for i in idx])
                       for g, idx in groups.items()},
        }

    # -- report ----------------------------------------------------------------------------------------------------
    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the kb-prior and its calibration (and on which split), the baselines, the KB."""
        from culturekb.evals.knowledge.report import calibration_split_note
        from culturekb.evals.reports import base_run_header, calibration_text

        header = base_run_header(self)
        retriever = self.augmenter.retriever
        tau = retriever.tau
        header.update({
            "model": f"{getattr(self.predictor, 'id', None) or 'kb-prior'} (offline: the KB's label prior and "
                     "retrieved tuples; no model call)",
            "judge": "none (the predicted label against the gold label)",
            "baseline": "majority (each culture's most frequent train label), orig (the prior alone), random-know and "
                        "cross-culture-know (tuples not retrieved for the sample)",
            "KB": f"{self.kb.version}" + (f" ({self.kb.path})" if self.kb.path else "") + f", tau {tau}",
            "KB calibration": calibration_text(self.kb_prior_calibration) + ". " +
                              calibration_split_note(results),
            "images sent": "none (the kb-prior reads the text and the KB; no model sees an image)",
            "prompt languages": "none sent (offline: no model call)",
            "split": f"{results['split']} ({results['n_samples']} samples)",
        })
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """The report's Markdown tables (`culturekb.evals.knowledge.report`)."""
        from culturekb.evals.knowledge.report import knowledge_tables

        return knowledge_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """Accuracy with intervals, paired differences, reliability diagram, coverage."""
        from culturekb.evals.knowledge.report import knowledge_plots

        return knowledge_plots(results)
