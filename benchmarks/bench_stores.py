"""Vector stores side by side: exact numpy, FAISS flat, FAISS HNSW, FAISS IVF and Qdrant local.

Data: 10^4, 10^5 and 10^6 random unit vectors of dimension 384 (the MiniLM size), spread over three cultures.
Queries: 1,000 "near-duplicate" queries (a stored vector of culture zh plus Gaussian noise, cosine ~0.86 to
it: the lookup situation, a query concept close to a KB concept), searched with the culture filter "zh", k=1.
A second, harder set of 200 uniform random queries (no close neighbour; the worst case for approximate
search) is reported for the tuned approximate indexes.

Per store and size: build time (add + training), memory (process RSS growth while building, psutil), queries
per second for the whole batch, recall@1 against exact numpy search. HNSW efSearch and IVF nprobe are swept;
the smallest value that reaches recall@1 >= 0.99 is reported as the tuned setting.

Qdrant local mode (qdrant-client, no server) stores points as Python objects and evaluates the payload
filter in Python for every point and query, so it is measured on fewer queries and skipped where its
measured cost per point says it would take minutes; each skip is recorded with the estimate behind it.

Writes benchmarks/results/bench_stores.json (and bench_stores.md) and prints one JSON line. About 5-8 min on
2 cores; `--sizes 10000,100000` for a shorter run.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.retrieval.stores import VectorStore, make_store
from culturekb.retrieval.stores.faiss_store import FaissStore

RESULTS = Path(__file__).parent / "results"
DIM = 384
CULTURES = ("en", "zh", "ar")
N_QUERIES = 1000
N_RANDOM = 200
SEED = 0
EF_SWEEP = (16, 32, 64, 128, 256)
NPROBE_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TARGET = 0.99
QDRANT_BUDGET_S = 60.0  # per size: build + queries, estimated from the measured per-point cost
BUILD_BUDGET_S = 240.0  # per FAISS approximate index, estimated from the previous size

log = logging.getLogger("bench_stores")


def rss() -> int:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is optional
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return int(psutil.Process().memory_info().rss)


def unit_rows(rng: np.random.Generator, n: int, chunk: int = 100_000) -> np.ndarray:
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, chunk):
        block = rng.standard_normal((min(chunk, n - s), DIM), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[s : s + block.shape[0]] = block
    return out


def make_data(n: int, rng: np.random.Generator) -> dict[str, Any]:
    vecs = unit_rows(rng, n)
    ids = [f"v{i}" for i in range(n)]
    payloads = [{"culture": CULTURES[i % 3]} for i in range(n)]
    zh_rows = np.arange(1, n, 3)
    src = rng.choice(zh_rows, N_QUERIES, replace=False)
    noise = rng.standard_normal((N_QUERIES, DIM), dtype=np.float32) * (0.6 / np.sqrt(DIM))
    near = vecs[src] + noise
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    return {"vecs": vecs, "ids": ids, "payloads": payloads, "near": near, "random": unit_rows(rng, N_RANDOM)}


def top1(store: VectorStore, q: np.ndarray) -> tuple[list[str | None], float]:
    t0 = time.perf_counter()
    res = store.search(q, k=1, culture="zh")
    dt = time.perf_counter() - t0
    return [r[0][0] if r else None for r in res], dt


def recall(got: list[str | None], ref: list[str | None]) -> float:
    return float(np.mean([a == b for a, b in zip(got, ref, strict=True)]))


def build(
    make: Callable[[], VectorStore], data: dict[str, Any], n: int | None = None
) -> tuple[VectorStore, float, int]:
    gc.collect()
    before = rss()
    t0 = time.perf_counter()
    store = make()
    k = n or len(data["ids"])
    store.add(data["ids"][:k], data["vecs"][:k], data["payloads"][:k])
    dt = time.perf_counter() - t0
    gc.collect()
    return store, dt, rss() - before


def bench_size(n: int, rng: np.random.Generator, prev: dict[str, Any] | None) -> dict[str, Any]:
    data = make_data(n, rng)
    out: dict[str, Any] = {"n": n, "stores": {}}
    log.info("size %d: data ready", n)

    ref, bt, mem = build(lambda: make_store("numpy", DIM), data)
    ref_near, qt = top1(ref, data["near"])
    ref_rand, _ = top1(ref, data["random"])
    out["stores"]["numpy-exact"] = {
        "build_s": round(bt, 3),
        "rss_mb": round(mem / 2**20, 1),
        "qps": round(N_QUERIES / qt, 1),
        "recall_at_1": 1.0,
    }
    del ref
    gc.collect()

    flat, bt, mem = build(lambda: make_store("faiss:flat", DIM), data)
    got, qt = top1(flat, data["near"])
    out["stores"]["faiss-flat"] = {
        "build_s": round(bt, 3),
        "rss_mb": round(mem / 2**20, 1),
        "qps": round(N_QUERIES / qt, 1),
        "recall_at_1": recall(got, ref_near),
    }
    del flat
    gc.collect()

    for kind, param, sweep in (("hnsw", "ef_search", EF_SWEEP), ("ivf", "nprobe", NPROBE_SWEEP)):
        name = f"faiss-{kind}"
        last = (prev or {}).get("stores", {}).get(name, {})
        if prev is not None and last.get("build_s") is not None:
            estimate = last["build_s"] * n / prev["n"] * (1.2 if kind == "hnsw" else 1.0)
            if estimate > BUILD_BUDGET_S:
                out["stores"][name] = {
                    "skipped": f"estimated build {estimate:.0f} s > budget {BUILD_BUDGET_S:.0f} s "
                    f"(from {last['build_s']} s at n={prev['n']})"
                }
                continue
        store, bt, mem = build(partial(make_store, f"faiss:{kind}", DIM), data)
        assert isinstance(store, FaissStore)  # "faiss:..." makes a FaissStore (tuned through its attributes below)
        rows = []
        chosen = None
        for value in sweep:
            setattr(store, param, value)
            got, qt = top1(store, data["near"])
            r = recall(got, ref_near)
            rows.append({param: value, "qps": round(N_QUERIES / qt, 1), "recall_at_1": r})
            if chosen is None and r >= TARGET:
                chosen = rows[-1]
                break
        tuned = chosen or rows[-1]
        setattr(store, param, tuned[param])
        got_r, _ = top1(store, data["random"])
        out["stores"][name] = {
            "build_s": round(bt, 3),
            "rss_mb": round(mem / 2**20, 1),
            "tuned": {param: tuned[param]},
            "qps": tuned["qps"],
            "recall_at_1": tuned["recall_at_1"],
            "reached_target": chosen is not None,
            "sweep": rows,
            "recall_at_1_uniform_random_queries": recall(got_r, ref_rand),
            "part_kinds": store.part_kinds(),
        }
        if kind == "ivf":
            nlist = {c: p.data.nlist for c, p in store._parts.items()}
            store.nprobe = None  # the store's default (auto_nprobe)
            got, qt = top1(store, data["near"])
            out["stores"][name]["nlist"] = nlist
            out["stores"][name]["default_nprobe"] = {
                "qps": round(N_QUERIES / qt, 1),
                "recall_at_1": recall(got, ref_near),
            }
        del store
        gc.collect()

    out["stores"]["qdrant-local"] = bench_qdrant(n, data, ref_near, prev)
    return out


def bench_qdrant(
    n: int, data: dict[str, Any], ref_near: list[str | None], prev: dict[str, Any] | None
) -> dict[str, Any]:
    last = (prev or {}).get("stores", {}).get("qdrant-local", {})
    if "add_s_per_point" in last:
        est_build = last["add_s_per_point"] * n
        est_query = last["query_s_per_point"] * n
        if est_build + 10 * est_query > QDRANT_BUDGET_S:
            prev_n = prev["n"] if prev else 0
            return {
                "skipped": (
                    f"qdrant local at n={n} would take about {est_build:.0f} s to fill and {est_query:.1f} s per "
                    f"filtered query ({est_query * N_QUERIES / 60:.0f} min for {N_QUERIES} queries), from the "
                    f"per-point costs measured at n={prev_n}; budget {QDRANT_BUDGET_S:.0f} s. Use a Qdrant server "
                    "(payload index) or FAISS at this size"
                )
            }
    store, bt, mem = build(lambda: make_store("qdrant", DIM, upload_batch=2048), data)
    nq = max(5, min(N_QUERIES, int(400_000 / n)))  # ~25 us per point and query: keep this to ~10 s
    got, qt = top1(store, data["near"][:nq])
    store.close()
    return {
        "build_s": round(bt, 3),
        "rss_mb": round(mem / 2**20, 1),
        "queries_measured": nq,
        "qps": round(nq / qt, 2),
        "recall_at_1": recall(got, ref_near[:nq]),
        "add_s_per_point": bt / n,
        "query_s_per_point": qt / nq / n,
        "note": "local mode (no server): brute force, payload filter evaluated in Python per point",
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Vector stores: build, memory, queries/s, recall@1 (k=1, culture filter, 384-d)",
        "",
        f"{result['machine']}",
        "",
        "| n | store | build s | RSS MB | queries/s | recall@1 | tuned | recall@1 random queries |",
        "|---:|---|---:|---:|---:|---:|---|---:|",
    ]
    for size in result["sizes"]:
        for name, r in size["stores"].items():
            if "skipped" in r:
                lines.append(f"| {size['n']:,} | {name} | skipped: {r['skipped']} | | | | | |")
                continue
            tuned = ", ".join(f"{k}={v}" for k, v in r.get("tuned", {}).items())
            rr = r.get("recall_at_1_uniform_random_queries", "")
            lines.append(
                f"| {size['n']:,} | {name} | {r['build_s']} | {r['rss_mb']} | {r['qps']} | "
                f"{r['recall_at_1']:.3f} | {tuned} | {rr} |"
            )
    return "\n".join(lines) + "\n"


def main(sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)) -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    t0 = time.perf_counter()
    results = []
    prev = None
    for n in sizes:
        prev = bench_size(n, rng, prev)
        results.append(prev)
        log.info("size %d done after %.0f s", n, time.perf_counter() - t0)
    result = {
        "name": "bench_stores",
        "dim": DIM,
        "queries": N_QUERIES,
        "random_queries": N_RANDOM,
        "target_recall_at_1": TARGET,
        "sizes": results,
        "total_s": round(time.perf_counter() - t0, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_stores.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "bench_stores.md").write_text(markdown(result), encoding="utf-8")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated store sizes")
    args = parser.parse_args()
    main(tuple(int(s) for s in args.sizes.split(",")))
