"""Cross-language concept matching: does a query concept in one language find the KB's English concept?

Data: culturekb/data/cross_language_pairs.jsonl, one pair a line: {"query", "language", "concept", "match",
"category"}: a query concept written in zh ja ar hi es sw de ru fr and an English KB concept, with whether the
query should retrieve it (a translation: "月亮"/"moon") or not (another concept: "月亮"/"sun", "红灯笼"/"white
lantern", "蜻蜓"/"dragon"). Written for culturekb (by an AI model; unchecked by native speakers). Both sides are
normalised as the Retriever normalises them (`normalise_concept`, English default: each script by its own rules)
and encoded with the embedder; a pair is predicted "match" when cosine >= tau and no colour conflict, as in the
Retriever. Precision and recall per tau, overall and per language, and the chosen tau under the rule of
benchmarks/tau_calibration.py (highest recall with precision >= 0.85).

Writes benchmarks/results/cross_language_tau.json and .md; prints one JSON line. Run:
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cross_language_tau.py [--embedder use]
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from tau_calibration import PRECISION_TARGET, THRESHOLDS, _prf

from culturekb.retrieval.retriever import DEFAULT_TAU, colour_conflict
from culturekb.text.normalise import normalise_concept

RESULTS = Path(__file__).parent / "results"


def load_pairs() -> list[dict[str, Any]]:
    """The labelled cross-language pairs shipped in culturekb/data."""
    text = resources.files("culturekb.data").joinpath("cross_language_pairs.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(spec: str = "use") -> dict[str, Any]:
    """Measure precision and recall of cross-language matches with the embedder `spec`; write the results."""
    from culturekb.models.factory import make_embedder

    embedder = make_embedder(spec)
    pairs = load_pairs()
    q = [normalise_concept(p["query"]) or p["query"] for p in pairs]
    c = [normalise_concept(p["concept"]) or p["concept"] for p in pairs]
    t0 = time.perf_counter()
    vecs = np.asarray(embedder.encode([*q, *c]), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    sims = (vecs[: len(q)] * vecs[len(q) :]).sum(axis=1)
    seconds = time.perf_counter() - t0
    gold = np.array([bool(p["match"]) for p in pairs])
    ok = np.array([not colour_conflict(a, b) for a, b in zip(q, c, strict=True)])
    curve = [{"tau": t, **_prf((sims >= t) & ok, gold)} for t in THRESHOLDS]
    good = [r for r in curve if r["precision"] >= PRECISION_TARGET] or curve
    best = max(good, key=lambda r: (r["recall"], r["precision"]))
    languages = sorted({p["language"] for p in pairs})
    per_language = {}
    for lang in languages:
        m = np.array([p["language"] == lang for p in pairs])
        per_language[lang] = {
            "pairs": int(m.sum()),
            "at_default": _prf(((sims >= DEFAULT_TAU) & ok)[m], gold[m]),
            "mean_cos_match": round(float(sims[m & gold].mean()), 3) if (m & gold).any() else None,
            "mean_cos_other": round(float(sims[m & ~gold].mean()), 3) if (m & ~gold).any() else None,
        }
    result = {
        "name": "cross_language_tau",
        "embedder": embedder.id,
        "pairs": len(pairs),
        "default_tau": DEFAULT_TAU,
        "at_default": _prf((sims >= DEFAULT_TAU) & ok, gold),
        "chosen_tau": best["tau"],
        "at_chosen": best,
        "curve": curve,
        "per_language": per_language,
        "pair_scores": [{**p, "cosine": round(float(s), 3)} for p, s in zip(pairs, sims, strict=True)],
        "encode_seconds": round(seconds, 3),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cross_language_tau.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), "utf-8")
    (RESULTS / "cross_language_tau.md").write_text(render(result), "utf-8")
    print(json.dumps({k: result[k] for k in ("name", "embedder", "pairs", "at_default", "chosen_tau", "at_chosen")}))
    return result


def render(result: dict[str, Any]) -> str:
    """The results as Markdown: the curve, then precision and recall per language at the default tau."""
    d = result["at_default"]
    lines = [
        f"# Cross-language concept matches ({result['embedder']})",
        "",
        f"{result['pairs']} labelled pairs (culturekb/data/cross_language_pairs.jsonl): a query concept in another "
        f"language against an English KB concept. At the default tau {result['default_tau']}: precision "
        f"{d['precision']}, recall {d['recall']}. Highest recall with precision >= {PRECISION_TARGET}: tau "
        f"{result['chosen_tau']}.",
        "",
        "| tau | precision | recall | F1 | TP | FP | FN |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["curve"]:
        lines.append(f"| {r['tau']:.2f} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | {r['tp']} | "
                     f"{r['fp']} | {r['fn']} |")
    lines += ["", f"Per language at tau {result['default_tau']}:", "",
              "| language | pairs | precision | recall | mean cos (match) | mean cos (other) |",
              "|---|---:|---:|---:|---:|---:|"]
    for lang, row in result["per_language"].items():
        a = row["at_default"]
        lines.append(f"| {lang} | {row['pairs']} | {a['precision']:.3f} | {a['recall']:.3f} | "
                     f"{row['mean_cos_match']} | {row['mean_cos_other']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="use", help="embedder spec (default: use)")
    main(parser.parse_args().embedder)
