"""Batched lookup vs a per-concept loop, and the share of lookup time spent outside the embedder.

Setup: a synthetic KB of about 3,000 tuples (three cultures, ~1,000 concepts each, modifier + noun phrases),
a FAISS index built with the real default embedder (all-MiniLM-L6-v2, memo disabled so that nothing is served
from the embedder's cache), and 1,000 distinct query concepts for one culture: 20% exact KB concepts, 80%
variants that go through the semantic path.

- batched: `Retriever.lookup(queries, culture)`: one encode call and one search call.
- loop: the straightforward way, `Retriever.lookup([q], culture)` per concept (one encode and one search each).
- outside-embedder share: (batched wall time - time inside `embedder.encode`) / batched wall time.
- the batched lookup with encode batch sizes 64 and 256.
Rounds interleave batched, batch-size and loop runs (medians of `repeats` rounds) so that load from other
processes on a shared machine affects them alike; wall and CPU (process) time are both reported.

Writes benchmarks/results/bench_lookup.json and prints one JSON line.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval import Retriever, build_index

RESULTS = Path(__file__).parent / "results"
N_QUERIES = 1000
SEED = 0

NOUNS = (
    "moon bamboo crane lantern dress river mountain temple dragon flower tree bird horse boat bridge house "
    "garden forest sea sky cloud sun star rain snow fire candle lamp vase bowl cup tea rice fish cat dog "
    "tiger lion deer rabbit goat sheep cow pig rooster peacock owl eagle swan duck butterfly bee lotus rose "
    "peony chrysanthemum pine willow maple plum cherry apple peach orange grape wine bread cake mask crown "
    "sword shield drum flute bell gate tower wall road street market palace church mosque tomb skull cross "
    "child woman man girl boy mother father king queen soldier monk priest farmer fisherman dancer musician"
).split()
MODIFIERS = (
    "red white black golden blue green yellow purple old young small large ancient broken wooden stone "
    "silver dark bright full empty quiet stormy misty snowy burning sleeping dancing flying fallen lonely "
    "distant sacred royal wild"
).split()
CULTURES = ("en", "zh", "ar")
LABELS = ("contentment", "awe", "amusement", "sadness", "fear", "excitement")


def make_kb(rng: np.random.Generator, per_culture: int = 1000) -> KnowledgeBase:
    phrases = [f"{m} {n}" for m in MODIFIERS for n in NOUNS]
    tuples = []
    for culture in CULTURES:
        chosen = set(rng.choice(len(phrases), per_culture - len(NOUNS), replace=False).tolist())
        concepts = list(NOUNS) + [phrases[i] for i in sorted(chosen)]
        for c in concepts:
            label = LABELS[int(rng.integers(len(LABELS)))]
            tuples.append(
                KnowledgeTuple(
                    concept=c,
                    culture=culture,
                    label=label,
                    distribution={label: 1.0},
                    support=int(rng.integers(1, 30)),
                    rationales=[f"{c} in {culture}"],
                )
            )
    return KnowledgeBase(tuples)


def make_queries(rng: np.random.Generator, kb: KnowledgeBase, culture: str) -> list[str]:
    own = [t.concept for t in kb.for_culture(culture)]
    exact = [own[i] for i in rng.choice(len(own), N_QUERIES // 5, replace=False)]
    extra = ("grove", "scene", "painting", "in the rain", "at night", "festival", "ruins", "shadow")
    variants: list[str] = []
    seen = set(exact)
    while len(variants) < N_QUERIES - len(exact):
        kind = int(rng.integers(3))
        n = NOUNS[int(rng.integers(len(NOUNS)))]
        m = MODIFIERS[int(rng.integers(len(MODIFIERS)))]
        e = extra[int(rng.integers(len(extra)))]
        q = {0: f"{m} {n} {e}", 1: f"{n} {e}", 2: f"{m} {m} {n}s"}[kind]
        if q not in seen:
            seen.add(q)
            variants.append(q)
    queries = exact + variants
    order = rng.permutation(len(queries))
    return [queries[i] for i in order]


class TimedEmbedder:
    """Delegates to an embedder and adds up the time spent in `encode`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self.seconds = 0.0
        self.calls = 0

    def encode(self, texts: Any, batch_size: int = 64) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            return self.inner.encode(texts, batch_size=batch_size)
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1


def main(repeats: int = 3) -> dict[str, Any]:
    """Run the benchmark (`repeats` interleaved rounds, medians reported) and write the results."""
    from culturekb.models.factory import make_embedder

    rng = np.random.default_rng(SEED)
    kb = make_kb(rng)
    base = make_embedder("minilm", memo_size=0)
    emb = TimedEmbedder(base)
    t0 = time.perf_counter()
    index = build_index(kb, emb, "faiss", persist=False)
    build_s = time.perf_counter() - t0
    retriever = Retriever(kb, index, emb)  # type: ignore[arg-type]
    queries = make_queries(rng, kb, "zh")
    retriever.lookup(queries[:50], "zh")  # warm-up (threads, allocations)
    default_bs = retriever.encode_batch_size

    # Rounds interleave the variants so that load from other processes hits them alike; wall and CPU time.
    batched, batched_cpu, shares, encode_calls = [], [], [], []
    loop, loop_cpu, loop_encode = [], [], []
    by_bs: dict[str, list[float]] = {"64": [], "256": []}
    out: list[Any] = []
    for _ in range(repeats):
        emb.seconds, emb.calls = 0.0, 0
        c0, t0 = time.process_time(), time.perf_counter()
        out = retriever.lookup(queries, "zh")
        wall = time.perf_counter() - t0
        batched.append(wall)
        batched_cpu.append(time.process_time() - c0)
        shares.append((wall - emb.seconds) / wall)
        encode_calls.append(emb.calls)

        for bs in by_bs:
            retriever.encode_batch_size = int(bs)
            t0 = time.perf_counter()
            retriever.lookup(queries, "zh")
            by_bs[bs].append(time.perf_counter() - t0)
        retriever.encode_batch_size = default_bs

        emb.seconds, emb.calls = 0.0, 0
        c0, t0 = time.process_time(), time.perf_counter()
        for q in queries:
            retriever.lookup([q], "zh")
        loop.append(time.perf_counter() - t0)
        loop_cpu.append(time.process_time() - c0)
        loop_encode.append(emb.calls)
    matched = sum(m is not None for m in out)
    exact = sum(m is not None and m.kind == "exact" for m in out)
    batch_s, loop_s = statistics.median(batched), statistics.median(loop)
    batch_cpu_s, loop_cpu_s = statistics.median(batched_cpu), statistics.median(loop_cpu)

    result = {
        "name": "bench_lookup",
        "kb_tuples": len(kb),
        "queries": len(queries),
        "exact_matches": exact,
        "semantic_matches": matched - exact,
        "unmatched": len(queries) - matched,
        "embedder": base.id,
        "index_build_s": round(build_s, 3),
        "repeats": repeats,
        "batched_s_median": round(batch_s, 3),
        "batched_s_runs": [round(x, 3) for x in batched],
        "batched_cpu_s_median": round(batch_cpu_s, 3),
        "batched_encode_calls": encode_calls[0],
        "batched_encode_batch_size": default_bs,
        "batched_s_by_encode_batch_size": {k: round(statistics.median(v), 3) for k, v in by_bs.items()},
        "batched_concepts_per_s": round(len(queries) / batch_s, 1),
        "loop_s_median": round(loop_s, 3),
        "loop_s_runs": [round(x, 3) for x in loop],
        "loop_cpu_s_median": round(loop_cpu_s, 3),
        "loop_encode_calls": loop_encode[0],
        "loop_concepts_per_s": round(len(queries) / loop_s, 1),
        "throughput_ratio_batched_over_loop": round(loop_s / batch_s, 2),
        "throughput_ratio_cpu_time": round(loop_cpu_s / batch_cpu_s, 2),
        "outside_embedder_share": round(statistics.median(shares), 4),
        "outside_embedder_share_runs": [round(x, 4) for x in shares],
        "outside_embedder_target": 0.10,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_lookup.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    main()
