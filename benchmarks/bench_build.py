"""The KB build, measured: offline defaults on an ArtEmis CSV, then the same build again (everything cached),
and an LLM-backed build against the scripted local server, then again (zero model calls).

    python benchmarks/bench_build.py [--data ../shared/data/artemis_subset/artemis_dev.csv]

Without --data (or when the file is missing) it uses the sample shipped in the package.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from culturekb._io import atomic_write_json  # noqa: E402
from culturekb.builders import BuildConfig, build_kb  # noqa: E402
from culturekb.builders.pipeline import BuildComponents, make_components  # noqa: E402
from culturekb.builders.rationales import LLMRationaleGenerator  # noqa: E402
from culturekb.kb import get_scheme  # noqa: E402
from culturekb.models import OpenAICompatClient  # noqa: E402
from culturekb.testing import ScriptedOpenAIServer  # noqa: E402
from culturekb.workflows import demo_data_files, load_data  # noqa: E402

RESULTS = Path(__file__).parent / "results"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/artemis_subset/artemis_dev.csv"


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("samples", "tuples", "rationales", "flagged", "flagged_rate", "judge_kappa", "model_calls", "wall_time_s")
    return {**{k: report[k] for k in keys}, "steps": report["steps"]}


def main(data: str | None = None) -> dict[str, Any]:
    path = Path(data) if data else DEFAULT_DATA
    files = [path] if path.is_file() else demo_data_files()
    samples, _ = load_data(files)
    config = BuildConfig()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        components = make_components(config)
        load_s = time.perf_counter() - t0
        first = build_kb(samples, config, out=Path(tmp) / "kb", cache_dir=Path(tmp) / "cache",
                         components=components, progress=False)
        second = build_kb(samples, config, out=Path(tmp) / "kb", cache_dir=Path(tmp) / "cache",
                          components=components, progress=False)

        answer = json.dumps(["It recalls a calm evening by the water.", "Viewers link it with rest and ease."])
        with ScriptedOpenAIServer(answer, latency_s=0.05) as srv:
            client = OpenAICompatClient("scripted-llm", base_url=srv.base_url, max_concurrency=32)
            generator = LLMRationaleGenerator(client, get_scheme(config.scheme))
            llm = BuildComponents(components.extractor, generator, components.judges, [client])
            cfg = BuildConfig(chunk_size=256)
            llm_first = build_kb(samples, cfg, cache_dir=Path(tmp) / "llm-cache", components=llm, progress=False)
            llm_second = build_kb(samples, cfg, cache_dir=Path(tmp) / "llm-cache", components=llm, progress=False)
            server_calls = srv.chat_calls
    result = {
        "data": str(files[0]) if len(files) == 1 else "package demo sample",
        "model_load_s": round(load_s, 2),
        "offline_first": _summary(first.report),
        "offline_second": _summary(second.report),
        "llm_first": _summary(llm_first.report),
        "llm_second": _summary(llm_second.report),
        "llm_server_calls_total": server_calls,
        "same_kb_version": first.kb.version == second.kb.version,
    }
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / "build.json", result)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    main(ap.parse_args().data)
