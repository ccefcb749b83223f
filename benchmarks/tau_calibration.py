"""Calibrate tau, the cosine threshold of a semantic match, on labelled concept pairs.

Data: culturekb/data/tau_pairs.jsonl, one pair a line: {"query", "concept", "match", "category"}: should a
query concept retrieve a KB tuple of that concept? Both sides are normalised as the retriever does; pairs that
become identical are exact matches (reported, not part of the semantic curve). The rest are encoded with the
default embedder and a pair is predicted "match" when cosine >= tau and, as in the Retriever's default, the two
do not name different colours (`colour_conflict`). The cosine-only curve is reported alongside.

Writes benchmarks/results/tau_curve.json and tau_curve.md; prints one JSON line. Run:
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/tau_calibration.py
"""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.retrieval.retriever import colour_conflict
from culturekb.text.normalise import normalise_concept

RESULTS = Path(__file__).parent / "results"
THRESHOLDS = [round(0.30 + 0.05 * i, 2) for i in range(14)]  # 0.30 .. 0.95
BETA = 0.5  # F-beta weighting: precision counts twice as much as recall (reported)
PRECISION_TARGET = 0.85  # selection rule: the threshold with the highest recall whose precision is >= this


def load_pairs() -> list[dict[str, Any]]:
    text = resources.files("culturekb.data").joinpath("tau_pairs.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _prf(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    tp = int((pred & gold).sum())
    fp = int((pred & ~gold).sum())
    fn = int((~pred & gold).sum())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 0.0
    b2 = BETA**2
    fb = (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f1, 4),
        "f0_5": round(fb, 4),
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def main(embedder: Any = None) -> dict[str, Any]:
    if embedder is None:
        from culturekb.models.factory import make_embedder

        embedder = make_embedder("minilm")
    pairs = load_pairs()
    exact: list[dict[str, Any]] = []
    semantic: list[dict[str, Any]] = []
    for p in pairs:
        q, c = normalise_concept(p["query"]), normalise_concept(p["concept"])
        (exact if q == c else semantic).append({**p, "q_norm": q, "c_norm": c})
    texts = sorted({p["q_norm"] for p in semantic} | {p["c_norm"] for p in semantic})
    t0 = time.perf_counter()
    vecs = embedder.encode(texts)
    row = {t: i for i, t in enumerate(texts)}
    sims = np.array([float(vecs[row[p["q_norm"]]] @ vecs[row[p["c_norm"]]]) for p in semantic])
    gold = np.array([bool(p["match"]) for p in semantic])
    guard_ok = np.array([not colour_conflict(p["q_norm"], p["c_norm"]) for p in semantic])
    curve = [{"tau": t, **_prf((sims >= t) & guard_ok, gold)} for t in THRESHOLDS]
    curve_cosine_only = [{"tau": t, **_prf(sims >= t, gold)} for t in THRESHOLDS]
    ok = [r for r in curve if r["precision"] >= PRECISION_TARGET] or curve
    best = max(ok, key=lambda r: (r["recall"], r["precision"]))
    per_category: dict[str, dict[str, Any]] = {}
    for cat in sorted({p["category"] for p in semantic}):
        s = sims[[p["category"] == cat for p in semantic]]
        per_category[cat] = {
            "pairs": int(s.size),
            "mean_cos": round(float(s.mean()), 3),
            "min_cos": round(float(s.min()), 3),
            "max_cos": round(float(s.max()), 3),
        }
    errors_at_best = sorted(
        (
            {"query": p["query"], "concept": p["concept"], "match": p["match"], "cos": round(float(s), 3)}
            for p, s, ok in zip(semantic, sims, guard_ok, strict=True)
            if (bool(s >= best["tau"]) and ok) != p["match"]
        ),
        key=lambda e: -e["cos"],
    )
    result = {
        "name": "tau_calibration",
        "embedder": embedder.id,
        "pairs": len(pairs),
        "positives": int(sum(p["match"] for p in pairs)),
        "exact_after_normalisation": {"pairs": len(exact), "of_which_labelled_match": sum(p["match"] for p in exact)},
        "semantic_pairs": len(semantic),
        "selection": f"highest recall with precision >= {PRECISION_TARGET} over thresholds 0.30..0.95 (step 0.05)",
        "chosen_tau": best["tau"],
        "at_chosen": best,
        "colour_guard_rejects": int((~guard_ok).sum()),
        "curve": curve,
        "curve_cosine_only": curve_cosine_only,
        "per_category": per_category,
        "errors_at_chosen": errors_at_best,
        "encode_s": round(time.perf_counter() - t0, 3),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "tau_curve.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"# Semantic-match threshold tau ({embedder.id})",
        "",
        f"{len(pairs)} labelled pairs (culturekb/data/tau_pairs.jsonl), {len(exact)} identical after normalisation "
        f"(exact matches, excluded), {len(semantic)} semantic pairs. Chosen: tau = {best['tau']} "
        f"(highest recall with precision >= {PRECISION_TARGET}; precision {best['precision']}, "
        f"recall {best['recall']}, F0.5 {best['f0_5']}).",
        "",
        f"Decision: cosine >= tau and no colour conflict (the Retriever default; {int((~guard_ok).sum())} pairs "
        "rejected by the colour guard). Last columns: the same threshold on cosine alone.",
        "",
        "| tau | precision | recall | F1 | F0.5 | TP | FP | FN | cosine-only P | cosine-only R |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r, cos_only in zip(curve, curve_cosine_only, strict=True):
        mark = " **(chosen)**" if r["tau"] == best["tau"] else ""
        lines.append(
            f"| {r['tau']:.2f}{mark} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | "
            f"{r['f0_5']:.3f} | {r['tp']} | {r['fp']} | {r['fn']} | {cos_only['precision']:.3f} | "
            f"{cos_only['recall']:.3f} |"
        )
    lines += ["", "| category | pairs | mean cos | min | max |", "|---|---:|---:|---:|---:|"]
    lines += [
        f"| {c} | {v['pairs']} | {v['mean_cos']} | {v['min_cos']} | {v['max_cos']} |" for c, v in per_category.items()
    ]
    lines += ["", f"Errors at tau = {best['tau']}:", ""]
    lines += [
        f"- {'missed' if e['match'] else 'false match'}: {e['query']!r} vs {e['concept']!r} (cos {e['cos']})"
        for e in errors_at_best
    ]
    (RESULTS / "tau_curve.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = {k: result[k] for k in ("name", "embedder", "pairs", "semantic_pairs", "chosen_tau", "at_chosen")}
    print(json.dumps(summary))
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
