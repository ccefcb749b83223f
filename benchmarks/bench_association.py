"""Benchmark: Eq. (1) association over 10^6 synthetic (concept, image, label) rows.

Three timings on the same data (20k concepts, 3 cultures, 9 labels by default):
  * `associate_arrays` on integer arrays (the vectorised core, incl. (concept, image) de-duplication),
  * `associate` end to end on string tuples (factorising strings + core + building `Association`s),
  * a naive per-row Python dict loop (the obvious implementation), checked to give identical results.
Prints one JSON line, writes benchmarks/results/association.json; `main()` returns the dict.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.builders.association import associate, associate_arrays
from culturekb.kb import get_scheme

RESULTS = Path(__file__).resolve().parent / "results" / "association.json"
CULTURES = ("en", "zh", "ar")


def make_data(
    n_rows: int, n_concepts: int, n_images: int, seed: int
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, list[tuple[str, str, str]]]]:
    """Per culture: integer arrays and the same rows as (concept, image_id, label) strings."""
    scheme = get_scheme("artemis9")
    rng = np.random.default_rng(seed)
    prior = np.array([0.3, 0.15, 0.12, 0.12, 0.1, 0.08, 0.05, 0.03, 0.05])
    concept_names = np.array([f"concept{i}" for i in range(n_concepts)], dtype=object)
    labels = np.array(scheme.labels, dtype=object)
    arrays: dict[str, dict[str, np.ndarray]] = {}
    strings: dict[str, list[tuple[str, str, str]]] = {}
    per = n_rows // len(CULTURES)
    for k, culture in enumerate(CULTURES):
        n = per if k < len(CULTURES) - 1 else n_rows - per * (len(CULTURES) - 1)
        image_label = rng.choice(len(prior), size=n_images, p=prior)
        # half the rows uniform over the vocabulary, half Zipf-like (a few very common concepts)
        uniform = rng.integers(0, n_concepts, n)
        zipf = np.minimum(rng.zipf(1.5, size=n) - 1, n_concepts - 1)
        concept = np.where(rng.random(n) < 0.5, zipf, uniform)
        image = rng.integers(0, n_images, n)
        label = image_label[image]
        arrays[culture] = {"concept": concept, "image": image, "label": label}
        image_names = np.array([f"{culture}-img{i}" for i in range(n_images)], dtype=object)
        strings[culture] = list(
            zip(concept_names[concept].tolist(), image_names[image].tolist(), labels[label].tolist(), strict=True)
        )
    return arrays, strings


def naive_associate(
    pairs: dict[str, list[tuple[str, str, str]]], min_support: int
) -> dict[tuple[str, str], tuple[str, int, tuple[int, ...]]]:
    """The obvious per-row implementation with the same semantics (distinct images, prior tie-break)."""
    labels = get_scheme("artemis9").labels
    out: dict[tuple[str, str], tuple[str, int, tuple[int, ...]]] = {}
    for culture, rows in pairs.items():
        seen: set[tuple[str, str]] = set()
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        image_label: dict[str, str] = {}
        for concept, image, label in rows:
            image_label[image] = label
            if (concept, image) not in seen:
                seen.add((concept, image))
                counts[concept][label] += 1
        prior = Counter(image_label.values())
        for concept, cnt in counts.items():
            support = sum(cnt.values())
            if support < min_support:
                continue
            best = max(labels, key=lambda lab: (cnt[lab], prior[lab], -labels.index(lab)))
            out[(culture, concept)] = (best, support, tuple(cnt[lab] for lab in labels))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--concepts", type=int, default=20_000)
    ap.add_argument("--images", type=int, default=50_000, help="images per culture")
    ap.add_argument("--min-support", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of N for the vectorised timings")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    arrays, strings = make_data(args.rows, args.concepts, args.images, args.seed)
    n_labels = len(get_scheme("artemis9").labels)

    def run_arrays() -> None:
        for a in arrays.values():
            associate_arrays(a["concept"], a["label"], args.concepts, n_labels, image_idx=a["image"])

    def best_of(fn: Any) -> float:
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    t_arrays = best_of(run_arrays)
    result_box: dict[str, Any] = {}
    t_assoc = best_of(lambda: result_box.update(r=associate(strings, min_support=args.min_support)))
    t0 = time.perf_counter()
    ref = naive_associate(strings, args.min_support)
    t_naive = time.perf_counter() - t0

    vec = {
        (a.culture, a.concept): (a.label, a.support, tuple(a.counts.values())) for a in result_box["r"]
    }
    identical = vec == ref
    report = {
        "benchmark": "association",
        "rows": args.rows,
        "concepts": args.concepts,
        "cultures": len(CULTURES),
        "labels": n_labels,
        "images_per_culture": args.images,
        "min_support": args.min_support,
        "associations": len(vec),
        "arrays_seconds": round(t_arrays, 4),
        "arrays_rows_per_s": round(args.rows / t_arrays),
        "associate_seconds": round(t_assoc, 4),
        "associate_rows_per_s": round(args.rows / t_assoc),
        "naive_seconds": round(t_naive, 4),
        "naive_rows_per_s": round(args.rows / t_naive),
        "speedup_arrays_vs_naive": round(t_naive / t_arrays, 1),
        "speedup_associate_vs_naive": round(t_naive / t_assoc, 2),
        "identical_to_naive": identical,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report))
    if not identical:
        raise SystemExit("vectorised and naive association differ")
    return report


if __name__ == "__main__":
    main()
