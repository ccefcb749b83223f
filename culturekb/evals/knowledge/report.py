"""Tables and plots of the knowledge report (`culturekb.evals.knowledge`), from its JSON-ready results.

Each table carries a note that says how to read it, including what it cannot show (wide intervals on small
splits, one-hot confidences, uncorrected p-values); ``docs/knowledge-report.md`` explains every figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from culturekb.evals.reports import (
    BarPlot,
    IntervalPlot,
    Plot,
    ReliabilityPlot,
    Table,
    interval_text,
    valid_accuracy_text,
)

__all__ = ["calibration_split_note", "knowledge_tables", "knowledge_plots"]

_SYSTEMS = ("orig", "know", "random-know", "cross-culture-know", "majority")
_SMALL = 100
"""Below this many samples in a group, the notes warn that intervals are wide."""


def _num(value: Any, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval_text(entry: Mapping[str, Any], signed: bool = False) -> str:
    if "note" in entry:
        return str(entry["note"])
    return f"{_num(entry['estimate'], signed)} [{_num(entry['low'], signed)}, {_num(entry['high'], signed)}]"


def _groups(results: Mapping[str, Any]) -> list[str]:
    """'overall', then each culture when there are several (with one, the culture is the overall row)."""
    cultures = list(results["per_culture_n"])
    return ["overall", *cultures] if len(cultures) > 1 else ["overall"]


def _p_text(p: float, prefix: str = "") -> str:
    return f"{prefix}<0.001" if p < 0.001 else f"{prefix}{'=' if prefix else ''}{p:.3f}"


def _bootstrap_note(results: Mapping[str, Any]) -> str:
    b = results["bootstrap"]
    note = (f"{results['n_samples']} samples of split {results['split']}; {b['confidence']:.0%} percentile-bootstrap "
            f"intervals over samples ({b['n_resamples']} resamples, seed {b['seed']}).")
    small = [g for g, n in (("overall", results["n_samples"]), *results["per_culture_n"].items()) if n < _SMALL]
    if small:
        note += (f" Fewer than {_SMALL} samples in {', '.join(small)}: the intervals are wide, so differences "
                 "inside them are not evidence either way.")
    return note


def _accuracy_table(results: Mapping[str, Any]) -> Table:
    groups = _groups(results)
    acc = results["accuracy"]
    rows = [[system, *(_interval_text(acc[g][system]) for g in groups)] for system in _SYSTEMS]
    return Table("Accuracy with 95% intervals", ["system", *groups], rows,
                 note=_bootstrap_note(results) + " 'majority': each culture's most frequent label in the train split.")


def _difference_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    overall = results["comparisons"]["overall"]
    rows = []
    for key, v in overall.items():
        if "note" in v:
            rows.append([key, v["note"], None, None, None, None])
            continue
        d, m = v["difference"], v["mcnemar"]
        rows.append([key, _num(d["estimate"], True), f"[{_num(d['low'], True)}, {_num(d['high'], True)}]",
                     m["a_only"], m["b_only"], _p_text(m["p_value"])])
    n_tests = sum(1 for v in overall.values() if "note" not in v)
    same = (" orig and majority gave the same answer on every sample (the KB's prior is the train split's label "
            "distribution), so their rows agree." if results.get("orig_equals_majority") else "")
    tables = {"differences": Table(
        "Paired differences: know minus each alternative",
        ["comparison", "difference", "95% interval", "know right only", "other right only", "McNemar p"], rows,
        note=("Paired bootstrap over samples (both systems resampled together); exact two-sided McNemar test on the "
              "samples where exactly one of the two is right. The p-values are not corrected for the "
              f"{n_tests} comparisons (Bonferroni: compare them with {0.05 / max(1, n_tests):.4f}). An interval "
              "that contains 0 does not show that knowledge helps or hurts." + same))}
    groups = _groups(results)
    if len(groups) > 1:
        per = results["comparisons"]
        cells = []
        for key in overall:
            row: list[Any] = [key]
            for g in groups:
                v = per[g][key]
                row.append(v["note"] if "note" in v else
                           f"{_interval_text(v['difference'], True)} {_p_text(v['mcnemar']['p_value'], 'p')}")
            cells.append(row)
        tables["differences_per_culture"] = Table("Paired differences per culture", ["comparison", *groups], cells)
    return tables


def _coverage_table(results: Mapping[str, Any]) -> Table:
    rows = []
    for g in _groups(results):
        c = results["coverage"][g]
        rows.append([g, c["n"], c["covered"], c["share"], c["exact"], c["semantic_only"], c["tuples_per_covered"]])
    return Table("Coverage: samples given at least one tuple (know)",
                 ["group", "samples", "covered", "share", "exact match", "semantic only", "tuples per covered"],
                 rows, precision=3,
                 note=("exact match: at least one tuple found by its concept's exact name; semantic only: every tuple "
                       "found by embedding similarity at or above tau."))


def _hit_table(results: Mapping[str, Any]) -> Table:
    rows = []
    for g in _groups(results):
        h = results["hit_precision"][g]
        know = h["know"]
        rows.append([g, know["tuples"], know["per_tuple"], know["per_sample"], know["any_hit"],
                     h.get("random-know", {}).get("per_tuple"), h.get("cross-culture-know", {}).get("per_tuple")])
    return Table("Hit precision: given tuples whose dominant emotion is the gold label",
                 ["group", "know tuples", "know per tuple", "know per sample", "know any hit",
                  "random-know per tuple", "cross-culture-know per tuple"], rows, precision=3,
                 note=("per sample: the mean over covered samples of their share of hits; any hit: covered samples "
                       "with at least one. The random-know and cross-culture-know columns are the same statistic for "
                       "tuples not retrieved for the sample: the gap to know is what retrieval adds. n/a: no such "
                       "tuple was given (cross-culture-know on a one-culture KB)."))


def _calibration_table(results: Mapping[str, Any]) -> Table:
    rows = [[key, c["source"], c["n"], interval_text(c["accuracy"], int(c["n"])), c["mean_confidence"], c["ece"],
             c["brier"], c["log_loss"]] for key, c in results["calibration"].items()]
    note = ("accuracy of the answered items [95% Wilson interval] n=answered; ECE over equal-width confidence bins; "
            "Brier (multi-class, 0-2) and log-loss (nats) need the predictor's probabilities.")
    if any(c["source"] != "probabilities" for c in results["calibration"].values()):
        note += (" one-hot: the predictor gave no probabilities, so every answer counts as sure (confidence 1) and "
                 "ECE is 1 - accuracy; that measures overconfidence, not the predictor's probabilities.")
    return Table("Calibration of the predicted label's probability",
                 ["mode", "probabilities", "answered", "accuracy", "mean confidence", "ECE", "Brier", "log-loss"],
                 rows, precision=3, note=note)


def _concept_table(title: str, rows: list[Mapping[str, Any]], note: str) -> Table:
    return Table(title, ["concept", "culture", "dominant label", "support", "used on", "helped", "hurt"],
                 [[r["concept"], r["culture"], r["label"], r["support"], r["used"], r["helped"], r["hurt"]]
                  for r in rows], note=note)


def _annotator_table(results: Mapping[str, Any]) -> Table:
    a = results["annotators"]
    if not a["available"]:
        return Table("Agreement with held-out annotators", ["status"], [[a["note"]]])
    rows = []
    for g in _groups(results):
        v = a["groups"][g]
        rows.append([g, v["n"], v["mean_annotators"], v["jsd"], v["jsd_prior"], v["top1"], v["top1_prior"]])
    sources = ", ".join(f"{k} {n}" for k, n in a["sources"].items())
    return Table("Agreement with held-out annotators",
                 ["group", "samples", "annotators per sample", "JSD (know)", "JSD (prior)", "top-1 (know)",
                  "top-1 (prior)"], rows, precision=3,
                 note=(f"Samples with at least {a['min_annotators']} annotator labels. JSD: Jensen-Shannon divergence "
                       "(bits, 0 = same distribution) to the annotators' label shares; lower is better. top-1: the "
                       "predicted label is one of the annotators' most frequent. Predicted distribution from: "
                       f"{sources}. The gold label is the annotators' majority, so top-1 is close to accuracy."))


def calibration_split_note(results: Mapping[str, Any]) -> str:
    """Which split the kb-prior's weights were chosen on, and whether that is the split this report is on (then
    its figures for know are optimistic: the weights were fitted to these very samples)."""
    cal = results.get("kb_prior_calibration") or {}
    if not cal:
        return "The kb-prior ran with its default weights (no calibration)."
    fitted = (cal.get("fitted_on") or {}).get("split")
    method = cal.get("method") or "a valid split and the training samples each left out of their own tuples"
    if fitted and fitted == results.get("split"):
        return (f"Chosen on {method}: that is the split reported here, so know's figures on it are optimistic "
                "(the weights were fitted to these samples); report the test split for an unbiased figure "
                "(docs/knowledge-model.md).")
    return (f"Chosen on {method}, not on the {results.get('split')} split reported here "
            "(docs/knowledge-model.md).")


def knowledge_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Accuracy, paired differences, coverage, hit precision, calibration, concepts, annotator agreement."""
    concepts = results["concepts"]
    tables = {"accuracy": _accuracy_table(results), **_difference_tables(results),
              "coverage": _coverage_table(results), "hit_precision": _hit_table(results),
              "calibration": _calibration_table(results)}
    tables["helped"] = _concept_table(
        "Concepts that helped most", concepts["helped"],
        f"{concepts['n_helped']} of {concepts['concepts']} concepts used in know helped at least once: know right "
        "and orig wrong on a sample the concept was given to (a sample with several concepts credits each).")
    tables["hurt"] = _concept_table(
        "Concepts that hurt most", concepts["hurt"],
        f"{concepts['n_hurt']} of {concepts['concepts']} concepts hurt at least once: know wrong and orig right.")
    tables["annotators"] = _annotator_table(results)
    cal = results.get("kb_prior_calibration")
    if cal:
        shown = {k: cal.get(k) for k in ("source", "method", "min_support", "min_informativeness", "alpha", "beta",
                                          "gamma", "pool")}
        shown.update({"tuples hidden by the concept filter": (cal.get("dropped") or {}).get("total"),
                      "cultures predicted from the prior only": ", ".join(cal.get("prior_only_cultures") or []) or
                      "none",
                      "valid accuracy, prior": valid_accuracy_text(cal, "prior_accuracy"),
                      "valid accuracy": valid_accuracy_text(cal)})
        tables["kb_prior_calibration"] = Table.from_mapping(
            "How the kb-prior was calibrated", shown, key="setting", precision=3,
            note=(calibration_split_note(results) + " In a culture predicted from the prior only, knowledge did worse "
                  "than the prior on valid, so know answers as orig there; its tuples are still retrieved and counted "
                  "in coverage and hit precision."))
    return tables


def knowledge_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Accuracy with intervals per system, paired differences around 0, the reliability diagram, coverage."""
    groups = _groups(results)
    acc = results["accuracy"]

    def bound(entry: Mapping[str, Any], key: str) -> float:
        return float("nan") if "note" in entry or entry[key] is None else float(entry[key])

    n_of = {"overall": results["n_samples"], **results["per_culture_n"]}
    labels = [f"{g} (n={n_of.get(g, 0)})" for g in groups]
    systems = [s for s in _SYSTEMS if s != "majority"]  # the majority baseline is a line, not a bar
    majority = bound(acc["overall"]["majority"], "estimate")
    plots: list[Plot] = [IntervalPlot(
        "accuracy", "Accuracy per system with 95% bootstrap intervals", labels,
        {s: [bound(acc[g][s], "estimate") for g in groups] for s in systems},
        {s: [bound(acc[g][s], "low") for g in groups] for s in systems},
        {s: [bound(acc[g][s], "high") for g in groups] for s in systems}, ylabel="accuracy", ylim=(0.0, 1.0),
        baselines={"majority baseline, overall": majority} if not math.isnan(majority) else {})]
    comp = results["comparisons"]
    keys = list(comp["overall"])

    def diff(g: str, k: str, what: str) -> float:
        v = comp[g][k]
        return float("nan") if "note" in v else bound(v["difference"], what)

    plots.append(IntervalPlot(
        "differences", "know minus each alternative (paired, 95% intervals)", keys,
        {g: [diff(g, k, "estimate") for k in keys] for g in groups},
        {g: [diff(g, k, "low") for k in keys] for g in groups},
        {g: [diff(g, k, "high") for k in keys] for g in groups},
        ylabel="accuracy difference", style="point", reference=0.0, value_format="{:+.2f}"))
    plots.append(ReliabilityPlot("reliability", "Reliability of the predicted label's probability",
                                 {k: c["bins"] for k, c in results["calibration"].items()}))
    cov = results["coverage"]
    cats = _groups(results)
    plots.append(BarPlot("coverage", "Samples given knowledge (know)", [f"{g} (n={n_of.get(g, 0)})" for g in cats],
                         {"any tuple": [cov[g]["share"] for g in cats],
                          "exact match": [cov[g]["share_exact"] for g in cats],
                          "semantic only": [cov[g]["share_semantic_only"] for g in cats]},
                         ylabel="share of samples", ylim=(0.0, 1.0)))
    return plots
