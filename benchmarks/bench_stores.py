"""Vector stores side by side on real held-out queries: exact numpy, FAISS flat / IVF / HNSW, Qdrant.

Queries are real concept strings that are never stored: about 10,700 concept strings shipped with the package
(the offline extractor's concepts of the demo data, its concept word lists, the tau pair files; see
`_real_concepts.py`), encoded with the default embedder (MiniLM, cached on disk) and reduced to distinct
vectors (MiniLM maps many strings of some scripts to one vector). 1,000 of them are held out as queries; the
rest are stored. Stores of 10^4, 10^5 and 10^6 tuples hold those real vectors, padded with synthetic vectors
drawn from a Gaussian mixture fitted to them (`ClusterSampler`: clustered like the real ones, never uniform
noise). Tuples are spread over three cultures; queries search with the culture filter "zh" (k=1), as the
index does it: one sub-index per culture, so each filtered search covers a third of the store.

Per store and size: build time (add + training), memory (process RSS growth while building, psutil), queries
per second for the whole batch, recall@1 against exact search (a tie in score counts as a hit). IVF nprobe and
HNSW efSearch are swept; the smallest value with recall@1 >= 0.99 is the tuned setting. `faiss-auto` is the
store as `culturekb index` builds it (`make_store("faiss")`: the kind and parameters chosen by size).

Qdrant: qdrant-client's local mode (brute force, filter in Python) and qdrant-edge-py (Qdrant's engine
in-process, keyword payload index on culture; exact search and HNSW), each skipped where its measured cost
says it would take minutes; a skip records the estimate behind it.

Writes benchmarks/results/bench_stores.json (and bench_stores.md) and prints one JSON line. About 6-8 min on
2 cores; `--sizes 10000,100000` for a shorter run.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _real_concepts import ClusterSampler, distinct_vectors, embedded_concepts  # noqa: E402

from culturekb.retrieval.stores import VectorStore, make_store  # noqa: E402
from culturekb.retrieval.stores.faiss_store import FaissStore  # noqa: E402

RESULTS = Path(__file__).parent / "results"
DIM = 384
CULTURES = ("en", "zh", "ar")
QUERY_CULTURE = "zh"
N_QUERIES = 1000
SEED = 0
EF_SWEEP = (16, 32, 64, 128, 256, 512)
NPROBE_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128)
TARGET = 0.99
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64  # qdrant-edge HNSW
TAU = 0.70  # the lookup threshold: queries whose exact top-1 is below it get no semantic match
# Largest store each slow builder is run at on 2 cores (build estimates: FAISS HNSW ~10 min at 10^6, Qdrant local
# ~3 min to fill and ~20 s per query, qdrant-edge HNSW ~15 min); `--all` lifts these caps.
MAX_N = {"faiss-hnsw": 100_000, "qdrant-local": 100_000, "qdrant-edge-hnsw": 100_000}
QDRANT_BUDGET_S = 60.0  # per size and Qdrant mode: build + queries, estimated from the measured per-point cost

log = logging.getLogger("bench_stores")


def rss() -> int:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is optional
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return int(psutil.Process().memory_info().rss)


def real_split() -> dict[str, Any]:
    """Distinct real concept vectors, 1,000 held out as queries and the rest to store, plus the sampler."""
    texts, cultures, vectors = embedded_concepts()
    keep, stats = distinct_vectors(texts, cultures, vectors)
    rng = np.random.default_rng(SEED)
    order = keep[rng.permutation(len(keep))]
    held, stored = order[:N_QUERIES], order[N_QUERIES:]
    return {
        "queries": np.ascontiguousarray(vectors[held]),
        "query_texts": [texts[i] for i in held[:10]],
        "stored": np.ascontiguousarray(vectors[stored]),
        "sampler": ClusterSampler(vectors[stored], seed=SEED),
        "stats": {**stats, "held_out_queries": int(len(held)), "stored_real": int(len(stored))},
    }


def make_data(n: int, real: dict[str, Any]) -> dict[str, Any]:
    """n tuples: the real stored vectors first (up to n), then mixture padding; cultures round robin."""
    stored = real["stored"]
    n_real = min(n, len(stored))
    vecs = np.concatenate([stored[:n_real], real["sampler"].sample(n - n_real)]) if n > n_real else stored[:n]
    ids = [f"v{i}" for i in range(n)]
    payloads = [{"culture": CULTURES[i % 3]} for i in range(n)]
    return {"vecs": np.ascontiguousarray(vecs), "ids": ids, "payloads": payloads, "queries": real["queries"],
            "n_real": n_real}


def top1(store: VectorStore, q: np.ndarray) -> tuple[list[tuple[str, float] | None], float]:
    t0 = time.perf_counter()
    res = store.search(q, k=1, culture=QUERY_CULTURE)
    dt = time.perf_counter() - t0
    return [r[0] if r else None for r in res], dt


def recall(got: list[tuple[str, float] | None], ref: list[tuple[str, float] | None]) -> float:
    """Share of queries whose top-1 is the exact top-1, or ties it in score (equal vectors, 1e-5)."""
    hits = [
        a is not None and b is not None and (a[0] == b[0] or abs(a[1] - b[1]) <= 1e-5)
        for a, b in zip(got, ref, strict=True)
    ]
    return float(np.mean(hits))


def build(make: Callable[[], VectorStore], data: dict[str, Any]) -> tuple[VectorStore, float, int]:
    gc.collect()
    before = rss()
    t0 = time.perf_counter()
    store = make()
    store.add(data["ids"], data["vecs"], data["payloads"])
    dt = time.perf_counter() - t0
    gc.collect()
    return store, dt, rss() - before


def row(bt: float, mem: int, nq: int, qt: float, r: float, **extra: Any) -> dict[str, Any]:
    return {"build_s": round(bt, 3), "rss_mb": round(mem / 2**20, 1), "qps": round(nq / qt, 1),
            "recall_at_1": r, **extra}


def sweep(store: FaissStore, param: str, values: tuple[int, ...], data: dict[str, Any],
          ref: list[tuple[str, float] | None]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    rows: list[dict[str, Any]] = []
    for value in values:
        setattr(store, param, value)
        got, qt = top1(store, data["queries"])
        rows.append({param: value, "qps": round(N_QUERIES / qt, 1), "recall_at_1": recall(got, ref)})
        if rows[-1]["recall_at_1"] >= TARGET:
            return rows, rows[-1]
    return rows, None


def bench_size(n: int, real: dict[str, Any], prev: dict[str, Any] | None) -> dict[str, Any]:
    data = make_data(n, real)
    out: dict[str, Any] = {"n": n, "real_stored": data["n_real"], "per_culture": n // 3, "stores": {}}
    log.info("size %d: data ready", n)

    ref_store, bt, mem = build(lambda: make_store("numpy", DIM), data)
    ref, qt = top1(ref_store, data["queries"])
    out["stores"]["numpy-exact"] = row(bt, mem, N_QUERIES, qt, 1.0)
    scores = np.array([h[1] for h in ref if h is not None])
    out["exact_top1_cosine"] = {q: round(float(np.percentile(scores, q)), 3) for q in (10, 50, 90)}
    out["exact_top1_real"] = float(np.mean([h is not None and int(h[0][1:]) < data["n_real"] for h in ref]))
    out["queries_above_tau"] = float(np.mean([h is not None and h[1] >= TAU for h in ref]))
    del ref_store
    gc.collect()

    flat, bt, mem = build(lambda: make_store("faiss:flat", DIM), data)
    got, qt = top1(flat, data["queries"])
    out["stores"]["faiss-flat"] = row(bt, mem, N_QUERIES, qt, recall(got, ref))
    flat_qps = out["stores"]["faiss-flat"]["qps"]
    del flat
    gc.collect()

    above_tau = np.array([h is not None and h[1] >= TAU for h in ref])
    auto, bt, mem = build(lambda: make_store("faiss", DIM), data)
    assert isinstance(auto, FaissStore)
    got, qt = top1(auto, data["queries"])
    out["stores"]["faiss-auto"] = row(bt, mem, N_QUERIES, qt, recall(got, ref), part_kinds=auto.part_kinds(),
                                      params=auto.part_params(), vs_flat=round(N_QUERIES / qt / flat_qps, 2))
    reuse = auto if set(auto.part_kinds().values()) == {"ivf"} else None  # faiss:ivf would build the same index
    auto_cost = (bt, mem)
    if reuse is None:
        del auto
    gc.collect()

    for kind, param, values in (("ivf", "nprobe", NPROBE_SWEEP), ("hnsw", "ef_search", EF_SWEEP)):
        name = f"faiss-{kind}"
        last = (prev or {}).get("stores", {}).get(name, {})
        if n > MAX_N.get(name, n):
            out["stores"][name] = {"skipped": f"not run above n={MAX_N[name]:,} on this machine (`--all` runs it)"}
            if prev is not None and last.get("build_s") is not None:
                estimate = last["build_s"] * n / prev["n"] * 1.2
                out["stores"][name]["skipped"] += f"; estimated build {estimate:.0f} s from {last['build_s']} s " \
                                                   f"at n={prev['n']:,}"
            continue
        made: VectorStore
        if kind == "ivf" and reuse is not None:
            made, (bt, mem) = reuse, auto_cost
        else:
            made, bt, mem = build(partial(make_store, f"faiss:{kind}", DIM), data)
        store = made
        assert isinstance(store, FaissStore)
        default = store.part_params()
        rows, chosen = sweep(store, param, values, data, ref)
        tuned = chosen or rows[-1]
        setattr(store, param, tuned[param])
        got, _ = top1(store, data["queries"])
        hits = np.array([recall([a], [b]) for a, b in zip(got, ref, strict=True)])
        out["stores"][name] = {
            "build_s": round(bt, 3), "rss_mb": round(mem / 2**20, 1), "tuned": {param: tuned[param]},
            "qps": tuned["qps"], "recall_at_1": tuned["recall_at_1"], "reached_target": chosen is not None,
            "recall_at_1_above_tau": round(float(hits[above_tau].mean()), 4) if above_tau.any() else None,
            "vs_flat": round(tuned["qps"] / flat_qps, 2), "sweep": rows, "default_params": default,
        }
        del store
        reuse = None
        gc.collect()

    out["stores"]["qdrant-local"] = bench_qdrant_local(n, data, ref, prev)
    for mode in ("exact", "hnsw"):
        out["stores"][f"qdrant-edge-{mode}"] = bench_qdrant_edge(n, data, ref, prev, mode)
    return out


def _over_budget(n: int, prev: dict[str, Any] | None, name: str) -> str | None:
    last = (prev or {}).get("stores", {}).get(name, {})
    if "add_s_per_point" not in last or prev is None:
        return None
    est_build = last["add_s_per_point"] * n
    est_query = last["query_s_per_point"] * n
    if est_build + 10 * est_query <= QDRANT_BUDGET_S:
        return None
    return (f"{name} at n={n:,} would take about {est_build:.0f} s to build and {est_query * 1000:.1f} ms per "
            f"filtered query, from the per-point costs measured at n={prev['n']:,}; budget {QDRANT_BUDGET_S:.0f} s")


def _over_cap(n: int, name: str) -> str | None:
    return f"not run above n={MAX_N[name]:,} on this machine (`--all` runs it)" if n > MAX_N.get(name, n) else None


def bench_qdrant_local(n: int, data: dict[str, Any], ref: list[tuple[str, float] | None],
                       prev: dict[str, Any] | None) -> dict[str, Any]:
    skip = _over_budget(n, prev, "qdrant-local") or _over_cap(n, "qdrant-local")
    if skip:
        return {"skipped": skip + ". Use a Qdrant server (payload index) or FAISS at this size"}
    store, bt, mem = build(lambda: make_store("qdrant", DIM, upload_batch=2048), data)
    nq = max(5, min(N_QUERIES, int(400_000 / n)))  # ~25 us per point and query: keep this to ~10 s
    got, qt = top1(store, data["queries"][:nq])
    store.close()
    return {**row(bt, mem, nq, qt, recall(got, ref[:nq])), "queries_measured": nq,
            "add_s_per_point": bt / n, "query_s_per_point": qt / nq / n,
            "note": "qdrant-client local mode (no server): brute force, payload filter evaluated in Python per point"}


def bench_qdrant_edge(n: int, data: dict[str, Any], ref: list[tuple[str, float] | None],
                      prev: dict[str, Any] | None, mode: str) -> dict[str, Any]:
    """qdrant-edge-py: one in-process shard, keyword payload index on culture; exact scan or HNSW (m=16)."""
    name = f"qdrant-edge-{mode}"
    try:
        import qdrant_edge as qe
    except ImportError as exc:
        return {"skipped": f"qdrant-edge-py is not installed ({exc}); pip install qdrant-edge-py"}
    skip = _over_budget(n, prev, name) or _over_cap(n, name)
    if skip:
        return {"skipped": skip}
    tmp = Path(tempfile.mkdtemp(prefix="bench-qedge-"))
    try:
        hnsw = qe.HnswIndexConfig(m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCTION, full_scan_threshold=10_000)
        # "exact": no HNSW is built (indexing threshold above the store size); "hnsw": optimize() builds it.
        threshold = 10**9 if mode == "exact" else 1_000
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Dot), hnsw_config=hnsw,
                               optimizers=qe.EdgeOptimizersConfig(indexing_threshold=threshold))
        gc.collect()
        before = rss()
        t0 = time.perf_counter()
        shard = qe.EdgeShard.create(str(tmp / "shard"), config)
        shard.update(qe.UpdateOperation.create_field_index("culture", qe.PayloadSchemaType.Keyword))
        vecs = data["vecs"]
        for s in range(0, n, 4096):
            points = [qe.Point(i, vecs[i].tolist(), data["payloads"][i]) for i in range(s, min(n, s + 4096))]
            shard.update(qe.UpdateOperation.upsert_points(points))
        shard.optimize()
        bt = time.perf_counter() - t0
        mem = rss() - before
        flt = qe.Filter(must=[qe.FieldCondition(key="culture", match=qe.MatchValue(QUERY_CULTURE))])
        params = qe.SearchParams(hnsw_ef=64, exact=mode == "exact")
        t0 = time.perf_counter()
        res = shard.query_batch(qe.QueryBatchRequest([
            qe.QueryRequest(limit=1, query=qe.Query.Nearest(q.tolist()), filter=flt, params=params)
            for q in data["queries"]
        ]))
        qt = time.perf_counter() - t0
        shard.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    got = [(f"v{r[0].id}", float(r[0].score)) if r else None for r in res]
    return {**row(bt, mem, N_QUERIES, qt, recall(got, ref)), "add_s_per_point": bt / n,
            "query_s_per_point": qt / N_QUERIES / n, "hnsw_ef": 64 if mode == "hnsw" else None,
            "note": f"qdrant-edge-py {qe_version()}, in-process shard, keyword payload index on culture"}


def qe_version() -> str:
    from importlib.metadata import version

    return version("qdrant-edge-py")


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Vector stores on real held-out queries: build, memory, queries/s, recall@1",
        "",
        f"k=1, culture filter {QUERY_CULTURE!r} (a third of the store), 384-d MiniLM vectors; "
        f"{result['real']['held_out_queries']} held-out real concept queries; "
        f"{result['real']['stored_real']} real stored vectors, the rest Gaussian-mixture padding. "
        f"Target recall@1 >= {result['target_recall_at_1']} against exact search. {result['machine']}",
        "",
        "| n | store | build s | RSS MB | queries/s | x flat | recall@1 | tuned / chosen |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for size in result["sizes"]:
        flat = size["stores"]["faiss-flat"]["qps"]
        for name, r in size["stores"].items():
            if "skipped" in r:
                lines.append(f"| {size['n']:,} | {name} | skipped: {r['skipped']} | | | | | |")
                continue
            tuned = ", ".join(f"{k}={v}" for k, v in r.get("tuned", {}).items())
            if r.get("recall_at_1_above_tau") is not None:
                tuned += f"; recall@1 of queries with top-1 >= tau: {r['recall_at_1_above_tau']:.3f}"
            if name == "faiss-auto":
                tuned = "; ".join(f"{k}" for k in sorted(set(r["part_kinds"].values())))
                tuned += " " + json.dumps(next(iter(r["params"].values()), {}))
            lines.append(
                f"| {size['n']:,} | {name} | {r['build_s']} | {r['rss_mb']} | {r['qps']} | "
                f"{r['qps'] / flat:.2f} | {r['recall_at_1']:.3f} | {tuned} |"
            )
    lines += ["", "Exact top-1 cosine of the held-out queries (10th, 50th, 90th percentile) and the share whose "
              "exact top-1 is a real (not padding) vector:", ""]
    for size in result["sizes"]:
        lines.append(f"- n={size['n']:,}: {size['exact_top1_cosine']}, real top-1 {size['exact_top1_real']:.2f}, "
                     f"top-1 >= tau {TAU}: {size['queries_above_tau']:.2f}")
    return "\n".join(lines) + "\n"


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(range(10_000))


def faiss_threads_main(n: int = 100_000, queries: int = 200, rounds: int = 3) -> dict[str, Any]:
    """Single-query latency of a FAISS flat index of `n` vectors: OpenMP on every core (FAISS's default) vs one
    thread vs the store's thread policy (`culturekb.models.threads.faiss_threads`), on the machine as it is and
    with one extra busy process per core (load made here, so that "under load" is reproducible). Settings
    interleave per round; medians of per-query times. Writes benchmarks/results/faiss_threads.json."""
    import multiprocessing

    import faiss

    from culturekb.models.threads import available_cores
    from culturekb.retrieval.stores.faiss_store import FaissStore

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, DIM), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    qs = vecs[rng.choice(n, queries, replace=False)] + rng.standard_normal((queries, DIM), dtype=np.float32) * 0.05
    qs = np.ascontiguousarray(qs / np.linalg.norm(qs, axis=1, keepdims=True), dtype=np.float32)
    store = FaissStore(dim=DIM)
    store.add([f"v{i}" for i in range(n)], vecs, [{"culture": "en"} for _ in range(n)])
    raw = faiss.IndexFlatIP(DIM)
    raw.add(vecs)
    cores = available_cores()

    def per_query(setting: str) -> float:
        times = []
        for q in qs:
            one = q[None, :]
            if setting == "policy":
                t0 = time.perf_counter()
                store.search(one, k=1, culture="en")
            else:
                faiss.omp_set_num_threads(1 if setting == "one_thread" else cores)
                t0 = time.perf_counter()
                raw.search(one, 1)
            times.append(time.perf_counter() - t0)
        faiss.omp_set_num_threads(cores)
        return statistics.median(times) * 1000

    out: dict[str, Any] = {"name": "faiss_threads", "n": n, "queries": queries, "cores": cores}
    for condition in ("as_is", "busy"):
        stop = multiprocessing.Event()
        spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
                    for _ in range(cores if condition == "busy" else 0)]
        for p in spinners:
            p.start()
        try:
            samples: dict[str, list[float]] = {"all_cores": [], "one_thread": [], "policy": []}
            for _ in range(rounds):
                for setting in samples:
                    samples[setting].append(per_query(setting))
            load = os.getloadavg()[0]
        finally:
            stop.set()
            for p in spinners:
                p.join()
        med = {k: round(statistics.median(v), 3) for k, v in samples.items()}
        out[condition] = {"median_ms": med, "policy_vs_one_thread": round(med["policy"] / med["one_thread"], 2),
                          "all_cores_vs_one_thread": round(med["all_cores"] / med["one_thread"], 2),
                          "load_avg_1m": round(load, 2)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "faiss_threads.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out))
    return out


def main(sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)) -> dict[str, Any]:
    t0 = time.perf_counter()
    real = real_split()
    results = []
    prev = None
    for n in sizes:
        prev = bench_size(n, real, prev)
        results.append(prev)
        log.info("size %d done after %.0f s", n, time.perf_counter() - t0)
    result = {
        "name": "bench_stores",
        "dim": DIM,
        "queries": N_QUERIES,
        "real": real["stats"],
        "query_examples": real["query_texts"],
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
    (RESULTS / "bench_stores.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    (RESULTS / "bench_stores.md").write_text(markdown(result), encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated store sizes")
    parser.add_argument("--all", action="store_true", help="run every store at every size (slow builders too)")
    parser.add_argument("--threads", action="store_true", help="only the FAISS single-query thread policy check")
    args = parser.parse_args()
    if args.threads:
        raise SystemExit(0 if faiss_threads_main() else 1)
    if args.all:
        MAX_N.clear()
    main(tuple(int(s) for s in args.sizes.split(",")))
