"""The default embedder against the machine's compute floor: float32 GEMM at MiniLM shapes and the batched encode
rate, measured side by side in one run, and their ratio.

- texts: the distinct strings of the packaged tau and cross-language pair files and the concept word lists of the
  offline extractor (about 1,900 short multilingual concept strings, 3-4 tokens on average with [CLS]/[SEP]);
- cost of a text: the multiply-adds of all-MiniLM-L6-v2 on its own tokens, padding excluded:
  6 layers x (24 L H^2 + 4 L^2 H) FLOP for L tokens, H = 384;
- floor: the float32 GEMM rate (GFLOP/s) of the four matrix products of a layer (512 tokens x 384 -> 1152, 384,
  1536; 512 x 1536 -> 384), run six times per 512 tokens of the texts (the encoder's matrix work for the same
  texts, timed as a whole like the encode run) with numpy's BLAS on 1 thread and on every core this process may
  use; the better of the two (on a loaded machine BLAS on all cores can be slower than on one), turned into
  texts/s by the cost above. The floor is what a runtime doing nothing but those products would reach;
- encode: `make_embedder("minilm")` (the default runtime, memo off) over all texts, one `encode` call, and for
  comparison the numpy runtime (`minilm:numpy`), the default runtime on one thread, and sentence-transformers (torch)
  when installed.
Rounds interleave floor and encode measurements so that load from other processes affects them alike; the ratio is
computed per round and its median reported, with `uptime`'s load average.

    python benchmarks/bench_embed_floor.py [--rounds 3]

Writes benchmarks/results/embed_floor.json and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS = Path(__file__).parent / "results"
HIDDEN, LAYERS, GEMM_TOKENS = 384, 6, 512


def texts() -> list[str]:
    data = resources.files("culturekb.data")
    found: list[str] = []
    for name in ("tau_pairs.jsonl", "cross_language_pairs.jsonl"):
        for line in data.joinpath(name).read_text("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                found += [row["query"], row["concept"]]
    for line in data.joinpath("text_concepts_en.txt").read_text("utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            found.append(line)
    return list(dict.fromkeys(found))


def flop_per_text(tokens: np.ndarray) -> np.ndarray:
    length = tokens.astype(np.float64)
    return LAYERS * (24 * length * HIDDEN**2 + 4 * length**2 * HIDDEN)


def gemm_gflops(threads: int, total_tokens: int) -> float:
    """GFLOP/s of the four matrix products of a MiniLM layer over `total_tokens` tokens (in blocks of 512, six
    layers), on `threads` BLAS threads: the encoder's matrix work for the same texts, timed as a whole like the
    encode run, so that both see the same load."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.standard_normal((GEMM_TOKENS, HIDDEN), dtype=np.float32)
    b = rng.standard_normal((GEMM_TOKENS, 4 * HIDDEN), dtype=np.float32)
    weights = [rng.standard_normal((HIDDEN, n), dtype=np.float32) for n in (3 * HIDDEN, HIDDEN, 4 * HIDDEN)]
    w_out = rng.standard_normal((4 * HIDDEN, HIDDEN), dtype=np.float32)
    blocks = max(1, round(total_tokens / GEMM_TOKENS)) * LAYERS
    flop = blocks * 2 * GEMM_TOKENS * HIDDEN * (3 * HIDDEN + HIDDEN + 4 * HIDDEN + 4 * HIDDEN)
    with threadpool_limits(threads, user_api="blas"):
        for w in weights:  # warm
            a @ w
        t0 = time.perf_counter()
        for _ in range(blocks):
            for w in weights:
                a @ w
            b @ w_out
        return flop / (time.perf_counter() - t0) / 1e9


def rate(embedder: Any, items: list[str]) -> float:
    t0 = time.perf_counter()
    embedder.encode(items)
    return len(items) / (time.perf_counter() - t0)


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from culturekb.models import make_embedder
    from culturekb.models.embedders import MiniLMEmbedder, default_minilm_path
    from culturekb.models.minilm_numpy import load_bert
    from culturekb.models.threads import available_cores, compute_threads

    items = texts()
    path = default_minilm_path().resolve()
    tokens = np.array([len(e.ids) for e in load_bert(path)._tokenizer.encode_batch(items)])
    flop = float(flop_per_text(tokens).sum())
    default = make_embedder("minilm", memo_size=0)
    runtimes: dict[str, Any] = {"default": default, "numpy": MiniLMEmbedder(runtime="numpy", memo_size=0)}
    if getattr(default, "runtime", "") == "onnx":
        runtimes["default_1_thread"] = MiniLMEmbedder(runtime="onnx", threads=1, memo_size=0)
    try:
        runtimes["sentence_transformers"] = make_embedder("minilm:st", memo_size=0)
    except Exception as exc:  # noqa: BLE001 - optional comparison
        print(f"sentence-transformers skipped: {exc}")
    for embedder in runtimes.values():
        embedder.encode(items[:64])  # load and warm
    cores = available_cores()  # the all-cores GEMM; the embedder picks its own threads (compute_threads)
    rounds: list[dict[str, float]] = []
    for _ in range(args.rounds):
        total = int(tokens.sum())
        row = {"gemm_1_thread_gflops": gemm_gflops(1, total), f"gemm_{cores}_threads_gflops": gemm_gflops(cores, total)}
        row["floor_gflops"] = max(row["gemm_1_thread_gflops"], row[f"gemm_{cores}_threads_gflops"])
        row["floor_texts_per_s"] = row["floor_gflops"] * 1e9 / (flop / len(items))
        for name, embedder in runtimes.items():
            row[f"{name}_texts_per_s"] = rate(embedder, items)
        row["floor_ratio"] = row["default_texts_per_s"] / row["floor_texts_per_s"]
        row["floor_ratio_1_thread"] = row.get("default_1_thread_texts_per_s", row["numpy_texts_per_s"]) / (
            row["gemm_1_thread_gflops"] * 1e9 / (flop / len(items)))
        rounds.append(row)
        print(json.dumps({k: round(v, 3) for k, v in row.items()}), flush=True)
    median = {k: round(statistics.median(r[k] for r in rounds), 3) for k in rounds[0]}
    result = {
        "benchmark": "embed_floor",
        "texts": len(items),
        "mean_tokens": round(float(tokens.mean()), 2),
        "mflop_per_text": round(flop / len(items) / 1e6, 1),
        "default_runtime": getattr(default, "runtime", type(default).__name__),
        "threads": compute_threads(),
        "cores": cores,
        "median": median,
        "rounds": rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embed_floor.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"floor_ratio": median["floor_ratio"], "floor_ratio_1_thread": median["floor_ratio_1_thread"],
                      "default_texts_per_s": median["default_texts_per_s"],
                      "floor_texts_per_s": median["floor_texts_per_s"], "load_average": result["load_average"]}))
    return result


if __name__ == "__main__":
    main()
