"""Run every benchmark in one go (`make bench`); each writes its results under benchmarks/results/.

    python benchmarks/run_all.py [--only NAME ...] [--skip NAME ...]

A NAME is a module of this folder (its `main()` runs) or `module:function` (that function runs), e.g.
`bench_stores:faiss_threads_main`, the FAISS single-query thread check without the whole stores sweep.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).parent
ORDER = ["bench_embed_floor", "bench_stores:faiss_threads_main", "bench_api:workers_main",
         "bench_association", "bench_model_calls", "bench_build", "bench_build:scale_curve_main", "tau_calibration",
         "bench_lookup", "bench_overhead", "bench_stores", "bench_api", "bench_parser", "bench_parse_scaling",
         "bench_startup", "fault_injection"]


def _load(name: str):  # noqa: ANN202 - a module object
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--skip", nargs="*", default=[])
    args = ap.parse_args()
    names = [n for n in ORDER if (HERE / f"{n.split(':')[0]}.py").exists()]
    names = [n for n in names if (args.only is None or n in args.only) and n not in args.skip]
    summary = {}
    for name in names:
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        module, _, function = name.partition(":")
        sys.argv = [f"{module}.py"]  # each benchmark runs with its own defaults
        result = getattr(_load(module), function or "main")()
        summary[name] = {"seconds": round(time.perf_counter() - t0, 1), "ok": result is not None}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
