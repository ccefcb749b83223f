"""Start-up cost of a one-concept `culturekb lookup`, before and after the numpy MiniLM runtime, side by side.

Setup: a small KB on disk (300 English tuples, modifier + noun phrases) indexed with the packaged all-MiniLM-L6-v2
(spec `minilm`, numpy backend store). Every command is a fresh process of the installed `culturekb` script, timed
by wall clock; rounds interleave the variants (median of `repeats` rounds) so that load from other processes on a
shared machine hits them alike.

- `culturekb --help`: the floor (Python, typer, the package's CLI module).
- after (default: numpy runtime, lazy model, query-embedding cache): an exact hit; a semantic query with a cold
  cache (a new cache dir per run: the model is loaded and run); the same semantic query with a warm cache.
- before (`--embedder minilm:st`, the sentence-transformers runtime, as every lookup ran until now): the same
  exact and semantic lookups, cold cache.
- encode throughput in one process, numpy runtime vs sentence-transformers (memo off), at batch 1 (one text per
  call) and batch 256, on real concept strings of the packaged pair files.

Writes benchmarks/results/startup.json and startup.md and prints one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
EXACT, SEMANTIC = "dog", "a sleepy puppy"
NEW_QUERIES = ("a sleepy puppy", "a misty harbour", "an old fisherman", "a paper kite", "a crying child",
               "a snowy pass", "a broken vase", "a festival drum", "a quiet library", "a burning ship")
"""Semantic queries no run has asked before (one per round), for the lookup a user makes with a new phrase."""
NOUNS = ("dog cat moon lantern river mountain temple dragon lotus bamboo crane tree bird horse boat bridge house "
         "garden forest sea sky cloud sun star rain snow fire candle tea rice fish tiger deer rabbit").split()
MODIFIERS = ("red white black golden blue green old small ancient wooden stone silver dark full quiet misty "
             "burning sleeping flying lonely").split()


def _cli() -> str:
    script = Path(sys.executable).parent / "culturekb"
    return str(script) if script.is_file() else "culturekb"


def make_kb(folder: Path) -> Path:
    """A 300-tuple English KB with a `minilm` index (numpy store) under `folder`."""
    from culturekb.kb import KnowledgeBase, KnowledgeTuple
    from culturekb.models import MiniLMEmbedder
    from culturekb.retrieval import build_index

    phrases = list(NOUNS) + [f"{m} {n}" for m in MODIFIERS for n in NOUNS]
    tuples = [KnowledgeTuple(concept=c, culture="en", label="awe", distribution={"awe": 1.0}, support=3,
                             rationales=[f"{c} seen in a painting"]) for c in phrases[:300]]
    kb_dir = folder / "kb"
    KnowledgeBase(tuples).save(kb_dir)
    build_index(KnowledgeBase.load(kb_dir), MiniLMEmbedder(), "numpy", embedder_spec="minilm")
    return kb_dir


def _run(args: list[str], cache_dir: Path) -> tuple[float, float]:
    """Run `culturekb ARGS` in a fresh process: (wall seconds, CPU seconds: user + system). On a loaded machine the
    wall time also counts the time the process waited for a core."""
    # as a user's Python runs it: bytecode is written (the first run writes it), not recompiled on every start
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"CULTUREKB_CACHE_DIR": str(cache_dir), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([_cli(), *args], capture_output=True, text=True, env=env, timeout=300, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"`culturekb {' '.join(args)}` failed: {proc.stderr[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _real_texts() -> list[str]:
    from _real_concepts import pair_rows  # benchmarks/ is on sys.path when a script of it runs

    return list(dict.fromkeys(t for row in pair_rows() for t in (row["query"], row["concept"])))


def throughput(texts: list[str], repeats: int = 3) -> dict[str, Any]:
    """Texts per second of both runtimes at batch 1 and 256 (median of `repeats`, interleaved)."""
    from culturekb.models import MiniLMEmbedder, SentenceTransformerEmbedder

    runtimes = {"numpy": MiniLMEmbedder(memo_size=0), "sentence-transformers": SentenceTransformerEmbedder(memo_size=0)}
    single = texts[:64]
    big = (texts * (512 // len(texts) + 1))[:512]
    for emb in runtimes.values():  # warm-up: weights read, threads started
        emb.encode(texts[:8])
    times: dict[str, dict[str, list[float]]] = {r: {"batch_1": [], "batch_256": []} for r in runtimes}
    for _ in range(repeats):
        for name, emb in runtimes.items():
            t0 = time.perf_counter()
            for t in single:
                emb.encode([t], batch_size=1)
            times[name]["batch_1"].append(len(single) / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            emb.encode(big, batch_size=256)
            times[name]["batch_256"].append(len(big) / (time.perf_counter() - t0))
    out: dict[str, Any] = {r: {k: round(statistics.median(v), 1) for k, v in d.items()} for r, d in times.items()}
    out["numpy_vs_st"] = {k: round(out["numpy"][k] / out["sentence-transformers"][k], 2) for k in ("batch_1",
                                                                                                     "batch_256")}
    out["texts"] = {"batch_1": len(single), "batch_256": len(big)}
    return out


def main(repeats: int = 5) -> dict[str, Any]:
    """Run the benchmark and write the results."""
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        root = Path(tmp)
        kb_dir = make_kb(root)
        lookup = ["lookup", "--culture", "en", "--kb", str(kb_dir)]
        warm = root / "warm-cache"
        _run([*lookup, SEMANTIC], warm)  # fills the warm cache (the query, the model's ONNX graph, the bytecode)
        # cache: "warm" (the query asked before), "model" (the model's graph made by an earlier run, as on any
        # machine after its first lookup; a query never asked), "none" (a new cache folder: the first run ever)
        variants: dict[str, tuple[list[str], str]] = {
            "help": (["--help"], "none"),
            "after_exact": ([*lookup, EXACT], "none"),
            "after_semantic_new_query": ([*lookup, "{query}"], "model"),
            "after_semantic_cold_cache": ([*lookup, SEMANTIC], "none"),
            "after_semantic_warm_cache": ([*lookup, SEMANTIC], "warm"),
            "before_exact": ([*lookup, "--embedder", "minilm:st", EXACT], "none"),
            "before_semantic": ([*lookup, "--embedder", "minilm:st", SEMANTIC], "none"),
        }
        walls: dict[str, list[float]] = {k: [] for k in variants}
        cpus: dict[str, list[float]] = {k: [] for k in variants}
        for r in range(repeats):
            for name, (args, cache) in variants.items():
                query = NEW_QUERIES[(r + 1) % len(NEW_QUERIES)]
                folder = warm if cache in ("warm", "model") else root / f"cache-{name}-{r}"
                wall, cpu = _run([a.replace("{query}", query) for a in args], folder)
                walls[name].append(wall)
                cpus[name].append(cpu)
    med = {k: round(statistics.median(v), 3) for k, v in walls.items()}
    result: dict[str, Any] = {
        "name": "bench_startup",
        "repeats": repeats,
        "wall_s_median": med,
        "wall_s_runs": {k: [round(x, 3) for x in v] for k, v in walls.items()},
        "ratios": {
            "before_exact / after_exact": round(med["before_exact"] / med["after_exact"], 1),
            "before_semantic / after_semantic_cold_cache": round(med["before_semantic"]
                                                                 / med["after_semantic_cold_cache"], 1),
            "after_semantic_cold_cache / help": round(med["after_semantic_cold_cache"] / med["help"], 1),
        },
        "cpu_s_median": {k: round(statistics.median(v), 3) for k, v in cpus.items()},
        "goal_lookup_le_3s": max(med["after_exact"], med["after_semantic_cold_cache"]) <= 3.0,
        "goal_semantic_lookup_le_1s": med["after_semantic_new_query"] <= 1.0,
        "throughput_texts_per_s": throughput(_real_texts()),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_avg": [round(x, 2) for x in os.getloadavg()]},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "startup.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    (RESULTS / "startup.md").write_text(_markdown(result), "utf-8")
    print(json.dumps(result))
    return result


def _markdown(r: dict[str, Any]) -> str:
    m, tp, cpu = r["wall_s_median"], r["throughput_texts_per_s"], r.get("cpu_s_median", {})
    rows = [
        ("`culturekb --help`", "help", "-"),
        (f"lookup `{EXACT}` (exact hit)", "after_exact", m["before_exact"]),
        ("lookup of a new phrase (semantic; the model's ONNX graph made by an earlier run)",
         "after_semantic_new_query", "-"),
        (f"lookup `{SEMANTIC}` (semantic, first run ever: new cache folder, graph made)",
         "after_semantic_cold_cache", m["before_semantic"]),
        (f"lookup `{SEMANTIC}` (semantic, warm query cache)", "after_semantic_warm_cache", "-"),
    ]
    lines = [
        "# Start-up: one-concept `culturekb lookup`",
        "",
        f"Wall time of a fresh process, median of {r['repeats']} interleaved runs (`benchmarks/bench_startup.py`). "
        "Before: `--embedder minilm:st` (sentence-transformers, torch; what every lookup did until now). After: the "
        "default MiniLM runtime (ONNX Runtime), the model made on the first encode, query embeddings cached on disk. "
        "Bytecode is written as a user's Python writes it (`PYTHONDONTWRITEBYTECODE` is removed for the runs).",
        "",
        "| command | after: wall (s) | after: CPU (s) | before: wall (s) |",
        "|---|---|---|---|",
        *[f"| {a} | {m[k]} | {cpu.get(k, '-')} | {c} |" for a, k, c in rows],
        "",
        f"Ratios: {', '.join(f'{k} = {v}x' for k, v in r['ratios'].items())}. Goal (<= 3 s): "
        f"{'met' if r['goal_lookup_le_3s'] else 'NOT met'}. Goal (a new phrase's semantic lookup <= 1.0 s): "
        f"{'met' if r.get('goal_semantic_lookup_le_1s') else 'NOT met'}. CPU: user + system seconds of the process "
        "(on a loaded machine the wall time also counts waiting for a core).",
        "",
        "## Encode throughput (texts/s, one process, memo off)",
        "",
        "| runtime | batch 1 | batch 256 |",
        "|---|---|---|",
        f"| numpy | {tp['numpy']['batch_1']} | {tp['numpy']['batch_256']} |",
        f"| sentence-transformers | {tp['sentence-transformers']['batch_1']} | "
        f"{tp['sentence-transformers']['batch_256']} |",
        f"| numpy / sentence-transformers | {tp['numpy_vs_st']['batch_1']}x | {tp['numpy_vs_st']['batch_256']}x |",
        "",
        f"Machine: {r['machine']['cpus']} CPUs, load average at the end {r['machine']['load_avg']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
