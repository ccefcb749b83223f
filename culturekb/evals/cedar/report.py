"""The Cedar report: tables (accuracy per language with intervals, propensity, quadrant bias, the language grid)
and plots (accuracy per language against chance and the majority label, quadrant bias, the language grid).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from culturekb.evals.metrics import wilson_interval
from culturekb.evals.reports import BarPlot, HeatmapPlot, IntervalPlot, Plot, Table, interval_text

__all__ = ["SUBSETS", "cedar_plots", "cedar_tables", "majority_share"]

SUBSETS: tuple[str, ...] = ("all", "multimodal", "text")
"""The item subsets each setting is scored on: every item, and the multimodal and text-only ones apart."""


def majority_share(golds: Sequence[str]) -> dict[str, Any]:
    """The most frequent gold label of these items and the accuracy of always answering it (ties: the label first
    in alphabetical order); None for no items."""
    counts = Counter(golds)
    if not counts:
        return {"label": None, "accuracy": None}
    label, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"label": label, "accuracy": n / len(golds)}


def _rows(results: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(row name, subset, block) for every setting and subset present."""
    out = []
    for key, entry in results["settings"].items():
        for subset in SUBSETS:
            if subset in entry:
                out.append((f"{key} / {subset}", subset, entry[subset]))
    return out


def cedar_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Accuracy per language with macro average and variance; GEPP, LSEPP, GRQB, LSRQB; the language grid."""
    langs = list(results["languages"])
    acc: dict[str, dict[str, Any]] = {}
    gepp: dict[str, dict[str, Any]] = {}
    lsepp: dict[str, dict[str, Any]] = {}
    grqb: dict[str, dict[str, Any]] = {}
    lsrqb: dict[str, dict[str, Any]] = {}
    for name, _subset, b in _rows(results):
        n_lang = b.get("n_per_language") or {}
        acc[name] = {**{lang: interval_text(b["per_language"][lang], int(n_lang.get(lang, 0)))
                        if lang in b["per_language"] else "n/a (no item in this language)" for lang in langs},
                     "macro": b["macro_average"], "variance": b["cross_lingual_variance"],
                     "overall": interval_text(b["accuracy"], b["n"]),
                     "invalid": b["invalid"], "errors": b["errors"], "with cues": b["with_cues"]}
        gepp[name] = dict(b["gepp"])
        for lang, row in b["lsepp"].items():
            lsepp[f"{name} / {lang}"] = dict(row)
        if "grqb" in b:
            grqb[name] = dict(b["grqb"])
            for lang, row in b["lsrqb"].items():
                lsrqb[f"{name} / {lang}"] = dict(row)
    n_note = ", ".join(f"{k}: {v}" for k, v in results["n_per_modality"].items())
    tables = {
        "accuracy": Table.from_nested(
            "Accuracy per language (macro average, cross-lingual variance)", acc, row_label="setting / subset",
            note=f"{results['n_samples']} items ({n_note}); accuracy [95% Wilson interval] n=items; macro: mean "
                 "of the per-language accuracies; variance of the per-language accuracies as fractions "
                 "(population variance)"),
        "gepp": Table.from_nested("Emotion prediction propensity, global (GEPP)", gepp, row_label="setting / subset",
                                  precision=2, note="N(pred = e) / N(gold = e); n/a: no gold item of that emotion"),
        "lsepp": Table.from_nested("Emotion prediction propensity per language (LSEPP)", lsepp,
                                   row_label="setting / subset / language", precision=2,
                                   note="n/a: no gold item of that emotion in that language"),
    }
    if grqb:
        tables["grqb"] = Table.from_nested("Russell quadrant bias, global (GRQB, %)", grqb,
                                           row_label="setting / subset", precision=1,
                                           note="(N(pred in q) - N(gold in q)) / N(gold) x 100; Q1 pleasant-active, "
                                                "Q2 unpleasant-active, Q3 unpleasant-passive, Q4 pleasant-passive")
        tables["lsrqb"] = Table.from_nested("Russell quadrant bias per language (LSRQB, %)", lsrqb,
                                            row_label="setting / subset / language", precision=1)
    if "grid" in results:
        n_lang = results.get("n_per_language") or {}
        grid = {row: {lang: interval_text(cells[lang], int(n_lang.get(lang, 0))) if lang in cells else
                      "n/a (no item in this language)" for lang in langs}
                for row, cells in results["grid"].items()}
        tables["grid"] = Table.from_nested(f"Prompt language x data language ({results['grid_mode']}, all items)",
                                           grid, row_label="prompt language", columns=langs,
                                           note="accuracy [95% Wilson interval] n=items in that data language")
    return tables


def _baselines(results: Mapping[str, Any], blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Chance (one over the scheme's labels) and the majority label of the subset's items, as baseline lines."""
    out: dict[str, float] = {}
    n_labels = results.get("n_labels")
    if n_labels:
        out[f"chance, 1/{n_labels} labels"] = 1.0 / int(n_labels)
    majority = next(iter(blocks.values())).get("majority") or {}
    if majority.get("accuracy") is not None:
        out[f"majority label: {majority['label']!s}"] = float(majority["accuracy"])
    return out


def cedar_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Per-language accuracy bars per subset against chance and the majority label, the quadrant-bias chart, and
    the language grid heatmap."""
    plots: list[Plot] = []
    for subset in SUBSETS:
        blocks = {key: entry[subset] for key, entry in results["settings"].items()
                  if subset in entry and entry["prompt_language"] is None}
        if not blocks:
            continue
        langs = [lang for lang in results["languages"] if any(lang in b["per_language"] for b in blocks.values())]
        n_lang = next(iter(blocks.values())).get("n_per_language") or {}
        est = {k: [b["per_language"].get(lang, math.nan) for lang in langs] for k, b in blocks.items()}
        bounds = {k: [wilson_interval(max(0, min(int(n_lang.get(lang, 0)), round(a * int(n_lang.get(lang, 0))))),
                                      int(n_lang.get(lang, 0))) if not math.isnan(a) else (math.nan, math.nan)
                      for lang, a in zip(langs, vals, strict=True)] for k, vals in est.items()}
        plots.append(IntervalPlot(
            f"accuracy-{subset}", f"Accuracy per language ({subset} items; 95% Wilson intervals)",
            [f"{lang} (n={n_lang.get(lang, 0)})" for lang in langs], est,
            {k: [b[0] for b in v] for k, v in bounds.items()}, {k: [b[1] for b in v] for k, v in bounds.items()},
            ylabel="accuracy", ylim=(0.0, 1.0), baselines=_baselines(results, blocks)))
    qb = {f"{key} / {subset} (n={entry[subset]['n']})": entry[subset]["grqb"]
          for key, entry in results["settings"].items()
          for subset in SUBSETS if subset in entry and "grqb" in entry[subset] and entry["prompt_language"] is None}
    if qb:
        plots.append(BarPlot.from_nested("quadrant-bias", "Russell quadrant bias (GRQB, %)", qb,
                                         ylabel="bias (points)", diverging=True, value_format="{:+.1f}"))
    if "grid" in results:
        grid = results["grid"]
        cols = [lang for lang in results["languages"] if any(lang in r for r in grid.values())]
        n_lang = results.get("n_per_language") or {}
        plots.append(HeatmapPlot("grid", f"Accuracy ({results['grid_mode']}): prompt language x data language",
                                 list(grid), [f"{c} (n={n_lang.get(c, 0)})" for c in cols],
                                 [[r.get(c) for c in cols] for r in grid.values()],
                                 xlabel="data language (items)", ylabel="prompt language", scale=(0.0, 1.0)))
    return plots
