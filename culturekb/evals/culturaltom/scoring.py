"""Scoring the CulturalToM-VQA run: accuracy and macro-F1 per setting and group, the blind and positivity
diagnostics, model calls per question; the report's tables and plots.

Macro-F1 is over the option letters (A, B, ...) as classes: per letter, F1 of "the answer is this letter" against "the
gold is this letter", averaged over the letters that occur as gold or as a valid answer. An invalid or failed
answer is a miss for its gold letter (it lowers that letter's recall) and no letter's false positive.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from culturekb.errors import DataError
from culturekb.evals.culturaltom.data import HUMAN_ACCURACY, MAX_OPTIONS, TaskMatrix, item_groups
from culturekb.evals.culturaltom.positivity import excess_positivity_drift, has_polarity_lexicon, positivity_pick
from culturekb.evals.metrics import accuracy, wilson_interval
from culturekb.evals.reports import IntervalPlot, Plot, Table, interval_text
from culturekb.inference.base import Prediction
from culturekb.inference.choices import option_letters
from culturekb.kb.schema import Sample

__all__ = ["setting_label", "macro_f1", "unread_at_chance", "accuracy_and_f1_by_group", "score_culturaltom",
           "culturaltom_tables", "culturaltom_plots"]

_GROUPS = (("task", "task"), ("level", "complexity level"), ("task_level", "task x level"),
           ("image_source", "image source"), ("region", "region"))


def _blind_pick(sample: Sample) -> float:
    """The expected score of a uniform guess on one item: 1 / (number of options; 4 when it has none listed)."""
    return 1 / len(sample.options or [0, 0, 0, 0])


def chance_accuracy(samples: Sequence[Sample]) -> float:
    """Expected accuracy of a uniform guess: the mean of 1 / (number of options) over the items."""
    return sum(_blind_pick(s) for s in samples) / len(samples) if samples else 0.0


def unread_at_chance(samples: Sequence[Sample], preds: Sequence[Prediction]) -> float:
    """Accuracy with every unread answer (``invalid``: the model answered, no option could be read) credited 1/k,
    the expected score of a blind pick among its k options; a failed call earns nothing. Benchmarks whose own
    rule guesses when it reads nothing (MMLU-Pro picks a random option, ToMBench takes the last capital A-D anywhere
    in the text) report about this figure; culturekb's `accuracy` credits an unread answer nothing. Deterministic:
    the expectation, not a draw."""
    if not preds:
        return 0.0
    credit = sum(1.0 if p.label is not None and p.label == s.label else
                 _blind_pick(s) if p.parse_status == "invalid" else 0.0
                 for s, p in zip(samples, preds, strict=True))
    return credit / len(preds)


def macro_f1(preds: Sequence[str | None], golds: Sequence[str]) -> float:
    """Macro-F1 over the classes seen among golds and valid predictions (None: a miss, nobody's false positive)."""
    if len(preds) != len(golds):
        raise DataError(f"macro_f1: {len(preds)} predictions for {len(golds)} golds")
    if not golds:
        return 0.0
    classes = sorted({*golds, *(p for p in preds if p is not None)})
    f1s = []
    for c in classes:
        tp = sum(p == c and g == c for p, g in zip(preds, golds, strict=True))
        fp = sum(p == c and g != c for p, g in zip(preds, golds, strict=True))
        fn = sum(p != c and g == c for p, g in zip(preds, golds, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return sum(f1s) / len(f1s)


def accuracy_and_f1_by_group(preds: Sequence[str | None], golds: Sequence[str], groups: Sequence[str]
                             ) -> dict[str, dict[str, float]]:
    """Per group value (sorted): accuracy, macro-F1 and the number of items."""
    out: dict[str, dict[str, float]] = {}
    for g in sorted(set(groups)):
        idx = [i for i, x in enumerate(groups) if x == g]
        p, y = [preds[i] for i in idx], [golds[i] for i in idx]
        out[g] = {"accuracy": accuracy(p, list(y)), "macro_f1": macro_f1(p, y), "n": len(idx)}
    return out


def _index(letter: str | None) -> int | None:
    return None if letter is None else option_letters(MAX_OPTIONS).index(letter)


def _setting_metrics(samples: Sequence[Sample], preds: Sequence[Prediction], groups: Mapping[str, list[str]],
                     option_scores: Sequence[Sequence[float]]) -> dict[str, Any]:
    golds = [str(s.label) for s in samples]
    letters = [p.label for p in preds]
    calls = [int(getattr(p, "calls", 0)) for p in preds]
    out: dict[str, Any] = {
        "accuracy": accuracy(letters, list(golds)), "macro_f1": macro_f1(letters, golds), "n": len(preds),
        "accuracy_unread_at_chance": unread_at_chance(samples, preds),
        "invalid": sum(p.parse_status == "invalid" for p in preds),
        "errors": sum(p.parse_status == "error" for p in preds),
        "parse_paths": dict(sorted(Counter(p.parse_path or p.parse_status for p in preds).items())),
        "calls_per_question": sum(calls) / len(calls) if calls else 0.0,
        "max_calls": max(calls, default=0), "calls": sum(calls),
        "with_cues": sum(bool(p.tuples_used) for p in preds),
        "cue_status": dict(sorted(Counter(getattr(p, "cue_status", "") for p in preds).items())),
        "scene_graph_status": dict(sorted(Counter(getattr(p, "scene_graph_status", "") for p in preds).items())),
        "positivity_drift": excess_positivity_drift(option_scores, [_index(g) or 0 for g in golds],
                                                    [_index(x) for x in letters]),
    }
    for key, _ in _GROUPS:
        out[f"by_{key}"] = accuracy_and_f1_by_group(letters, golds, groups[key])
    return out


def _blind(samples: Sequence[Sample], by_setting: Mapping[str, Sequence[Prediction]]) -> dict[str, Any] | None:
    """zero-shot with vs without the image, over the questions that have one."""
    if "blind" not in by_setting or "zero-shot" not in by_setting:
        return None
    idx = [i for i, s in enumerate(samples) if s.image and str(s.metadata.get("image_source", "")).lower() != "none"]
    if not idx:
        return {"n_with_image": 0, "note": "no question has an image; the blind run equals zero-shot"}
    golds = [str(samples[i].label) for i in idx]
    seen = [by_setting["zero-shot"][i].label for i in idx]
    blind = [by_setting["blind"][i].label for i in idx]
    acc_seen, acc_blind = accuracy(seen, list(golds)), accuracy(blind, list(golds))
    return {"n_with_image": len(idx), "accuracy_with_image": acc_seen, "accuracy_blind": acc_blind,
            "image_gain": acc_seen - acc_blind,
            "same_answer": sum(a == b and a is not None for a, b in zip(seen, blind, strict=True)) / len(idx),
            "blind_above_chance": acc_blind - chance_accuracy([samples[i] for i in idx])}


def score_culturaltom(samples: Sequence[Sample], by_setting: Mapping[str, Sequence[Prediction]], *, model: str,
                      positivity_seed: int = 0, matrix: TaskMatrix | None = None) -> dict[str, Any]:
    """Every metric of the report (pure: samples and predictions in, a JSON-safe mapping out)."""
    groups = item_groups(samples)
    picks = [positivity_pick(s.options or [], str(s.metadata.get("language", "en")), seed=positivity_seed,
                             item_id=s.id) for s in samples]
    option_scores = [list(p.scores) for p in picks]
    golds = [_index(s.label) or 0 for s in samples]
    aligned: dict[str, list[Prediction]] = {}
    for key, preds in by_setting.items():
        by_id = {p.sample_id: p for p in preds}
        missing = [s.id for s in samples if s.id not in by_id]
        if missing:
            raise DataError(f"culturaltom/{key}: {len(missing)} questions have no answer (first: {missing[:5]}); "
                            "rerun to resume")
        aligned[key] = [by_id[s.id] for s in samples]
    settings = {key: _setting_metrics(samples, preds, groups, option_scores) for key, preds in aligned.items()}
    expected = sum(p.expected_credit(g) for p, g in zip(picks, golds, strict=True)) / len(samples)
    return {
        "model": model, "n_samples": len(samples), "human_accuracy": HUMAN_ACCURACY,
        "chance_accuracy": chance_accuracy(samples),
        "counts": {key: dict(sorted(Counter(v).items())) for key, v in groups.items()},
        "matrix": matrix.to_dict() if matrix is not None else None,
        "settings": settings,
        "blind": _blind(samples, aligned),
        "positivity_baseline": {
            "accuracy": accuracy([option_letters(MAX_OPTIONS)[p.pick] for p in picks],
                                 [str(s.label) for s in samples]),
            "expected_accuracy": expected, "seed": positivity_seed,
            "gold_is_most_positive": sum(g in p.tied for p, g in zip(picks, golds, strict=True)) / len(samples),
            "ties": sum(len(p.tied) > 1 for p in picks),
            "items_without_own_lexicon": sum(not has_polarity_lexicon(str(s.metadata.get("language", "en")))
                                             for s in samples)},
    }


# -- tables and plots ---------------------------------------------------------------------------------------------


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def setting_label(model: str, key: str) -> str:
    """A setting's row name: ``<model> / <setting>``, but the positivity baseline makes no model call."""
    return "positivity baseline (no model call)" if key == "positivity" else f"{model} / {key}"


def culturaltom_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Summary per setting (by model), accuracy and macro-F1 per group, the blind and positivity diagnostics."""
    settings = results["settings"]
    model = results["model"]
    no_drift = "n/a (no wrong answer to drift)"
    summary: dict[str, dict[str, Any]] = {setting_label(model, k): {
        "accuracy": interval_text(v["accuracy"], v["n"]),
        "unread at chance %": _pct(v.get("accuracy_unread_at_chance")),
        "macro-F1 %": _pct(v["macro_f1"]), "n": v["n"],
        "invalid": v["invalid"], "errors": v["errors"], "calls / question": v["calls_per_question"],
        "with cues": v["with_cues"],
        "EPD (pp)": _pct(v["positivity_drift"]["drift"]) if v["positivity_drift"]["drift"] is not None else no_drift}
        for k, v in settings.items()}
    reference = dict.fromkeys(("unread at chance %", "macro-F1 %", "n", "invalid", "errors", "calls / question",
                               "with cues", "EPD (pp)"), "")
    summary["human reference"] = {"accuracy": f"{results['human_accuracy']:.3f} (the paper's, not measured here)",
                                  **reference}
    summary["chance"] = {"accuracy": f"{results['chance_accuracy']:.3f} (1 / options, averaged over the questions)",
                         **reference}
    tables = {"summary": Table.from_nested(
        "Accuracy and macro-F1 by model and setting", summary, row_label="model / setting", precision=1,
        note=f"accuracy [95% Wilson interval] n=questions; human accuracy {100 * results['human_accuracy']:.1f}% "
             "(the paper's reference) and chance are reference levels, not runs (their other cells are empty); "
             "invalid and failed answers are scored wrong; unread at chance: accuracy with each invalid (unread) "
             "answer credited 1/options, the expected score of the blind pick some benchmarks' own rules make "
             "(compare it with their published figures); EPD: Excess Positivity Drift "
             "among wrong answers, observed - chance, in percentage points")}
    for key, title in _GROUPS:
        for metric, label in (("accuracy", "Accuracy"), ("macro_f1", "Macro-F1 (%)")):
            rows: dict[str, dict[str, Any]] = {}
            for group, n in results["counts"][key].items():
                rows[group] = {**{k: interval_text(v[f"by_{key}"][group][metric], n) if metric == "accuracy" else
                                  _pct(v[f"by_{key}"][group][metric]) for k, v in settings.items()}, "n": n}
            tables[f"{metric}_{key}"] = Table.from_nested(
                f"{label} by {title}", rows, row_label=title, precision=1,
                note="accuracy [95% Wilson interval] n=questions in the group" if metric == "accuracy" else
                "macro-F1 over the answer letters; n/a: no question in the group")
    blind = results.get("blind")
    if blind and blind.get("n_with_image"):
        tables["blind"] = Table.from_mapping(
            "Blind run (zero-shot without the image, questions with an image)",
            {"questions with an image": blind["n_with_image"],
             "accuracy with image %": _pct(blind["accuracy_with_image"]),
             "accuracy blind %": _pct(blind["accuracy_blind"]), "gain from the image (pp)": _pct(blind["image_gain"]),
             "same answer with and without image %": _pct(blind["same_answer"])},
            key="", value="value", precision=1)
    pos = results["positivity_baseline"]
    drift = {setting_label(results["model"], k): {"wrong answers": v["positivity_drift"]["n_wrong"],
                 "more positive than gold %": _pct(v["positivity_drift"]["observed"]),
                 "chance %": _pct(v["positivity_drift"]["chance"]), "EPD (pp)": _pct(v["positivity_drift"]["drift"]),
                 "ratio": v["positivity_drift"]["ratio"]} for k, v in settings.items()}
    tables["positivity"] = Table.from_nested(
        "Positivity: Excess Positivity Drift among wrong answers", drift, row_label="setting", precision=2,
        note=(f"positivity baseline (most positive option, NRC polarity): accuracy {100 * pos['accuracy']:.1f}%, "
              f"expected under a uniform tie-break {100 * pos['expected_accuracy']:.1f}%; the gold option is among "
              f"the most positive in {100 * pos['gold_is_most_positive']:.1f}% of questions; {pos['ties']} ties. "
              "Chance: a uniform pick among each item's wrong options. n/a: no wrong answer in the setting (ratio: "
              "also when chance is 0)"))
    return tables


def culturaltom_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Accuracy per task and per level, one bar series per setting plus the human reference."""
    settings = results["settings"]
    model = results["model"]
    plots: list[Plot] = []
    for key, title in (("task", "task"), ("level", "complexity level")):
        counts = results["counts"][key]
        groups = list(counts)
        est = {setting_label(model, k): [v[f"by_{key}"][g]["accuracy"] for g in groups] for k, v in settings.items()}
        bounds = {k: [wilson_interval(max(0, min(counts[g], round(a * counts[g]))), counts[g])
                      if a is not None and not math.isnan(a) else (math.nan, math.nan)
                      for g, a in zip(groups, vals, strict=True)] for k, vals in est.items()}
        plots.append(IntervalPlot(
            f"accuracy-{key.replace('_', '-')}", f"Accuracy by {title} (95% Wilson intervals)",
            [f"{g} (n={counts[g]})" for g in groups], est, {k: [b[0] for b in v] for k, v in bounds.items()},
            {k: [b[1] for b in v] for k, v in bounds.items()}, ylabel="accuracy", ylim=(0.0, 1.0),
            baselines={"human, overall": results["human_accuracy"], "chance": results["chance_accuracy"]}))
    return plots
