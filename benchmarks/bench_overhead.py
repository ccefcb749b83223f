"""Pipeline overhead per sample outside the model call, as a share of a 200 ms model call.

The ModelPredictor (know mode) runs against the scripted OpenAI-compatible server with a fixed 200 ms latency,
one request at a time. Overhead = concept extraction + retrieval + knowledge block + prompt building + parsing,
measured two ways side by side in one run:

- component time: the predictor's own work timed directly (augment, build messages, parse) per sample;
- end to end: (wall time per sample) - 200 ms, which also includes the HTTP round trip on loopback.

Target: component overhead <= 2% of the 200 ms call (4 ms per sample).

    python benchmarks/bench_overhead.py [--samples 48] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from culturekb._io import atomic_write_json  # noqa: E402
from culturekb.inference.augmenter import Augmenter  # noqa: E402
from culturekb.inference.parsing import parse_prediction  # noqa: E402
from culturekb.inference.predictors import ModelPredictor  # noqa: E402
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample  # noqa: E402
from culturekb.models import OpenAICompatClient  # noqa: E402
from culturekb.models.factory import make_embedder  # noqa: E402
from culturekb.retrieval.retriever import open_retriever  # noqa: E402
from culturekb.testing import ScriptedOpenAIServer  # noqa: E402

RESULTS = Path(__file__).parent / "results"
WORDS = ["moon", "river", "bamboo", "crane", "mountain", "storm", "ship", "garden", "lantern", "temple", "horse",
         "portrait", "flower", "skull", "church", "forest", "snow", "bridge", "boat", "tiger"]


def _kb() -> KnowledgeBase:
    tuples = []
    for i, w in enumerate(WORDS):
        for c, lab in (("en", "contentment"), ("zh", "awe")):
            tuples.append(KnowledgeTuple(concept=w, culture=c, label=lab, distribution={lab: 0.7, "sadness": 0.3},
                                         support=3 + i, rationales=[f"{w} often evokes {lab} in this culture",
                                                                   "a second, longer rationale about its meaning"]))
    return KnowledgeBase(tuples)


def main(samples: int = 48, latency: float = 0.2) -> dict[str, Any]:
    embedder = make_embedder("minilm")
    augmenter = Augmenter(open_retriever(_kb(), embedder, backend="faiss"))
    items = [Sample(id=f"s{i}", culture="zh" if i % 2 else "en", title=f"{WORDS[i % 20]} by the {WORDS[(i * 7) % 20]}",
                    metadata={"art_style": "Romanticism"}) for i in range(samples)]
    answer = '{"emotion": "awe", "explanation": "the moon over the river feels vast"}'
    with ScriptedOpenAIServer(answer, latency_s=latency) as srv:
        client = OpenAICompatClient("bench", base_url=srv.base_url, max_concurrency=1)
        predictor = ModelPredictor(client, augmenter)
        predictor.predict(items[:2], mode="know")  # warm up (model load, connections)
        # component time, per sample, one sample at a time as in a streaming harness
        t_aug = t_build = t_parse = 0.0
        for s in items:
            t0 = time.perf_counter()
            aug = augmenter.augment_many([s], mode="know")[0]
            t1 = time.perf_counter()
            lang = "zh" if s.culture == "zh" else "en"
            predictor.build(s, aug, "know", lang)
            t2 = time.perf_counter()
            parse_prediction(answer, augmenter.retriever.kb.scheme, lang)
            t3 = time.perf_counter()
            t_aug, t_build, t_parse = t_aug + t1 - t0, t_build + t2 - t1, t_parse + t3 - t2
        component_ms = (t_aug + t_build + t_parse) / samples * 1000
        # end to end, sequential calls
        t0 = time.perf_counter()
        for s in items:
            predictor.predict([s], mode="know")
        wall = time.perf_counter() - t0
    per_sample_ms = wall / samples * 1000
    result = {
        "samples": samples,
        "model_latency_ms": latency * 1000,
        "component_overhead_ms": round(component_ms, 3),
        "component_breakdown_ms": {"augment (concepts + lookup + block)": round(t_aug / samples * 1000, 3),
                                   "build prompt + messages": round(t_build / samples * 1000, 3),
                                   "parse": round(t_parse / samples * 1000, 3)},
        "component_share_of_call": round(component_ms / (latency * 1000), 4),
        "end_to_end_per_sample_ms": round(per_sample_ms, 3),
        "end_to_end_overhead_share": round((per_sample_ms - latency * 1000) / (latency * 1000), 4),
        "target_share": 0.02,
        "meets_target": component_ms / (latency * 1000) <= 0.02,
        "python": sys.version.split()[0],
        "load_average_1m": os.getloadavg()[0],
    }
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / "overhead.json", result)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--latency", type=float, default=0.2)
    a = ap.parse_args()
    main(a.samples, a.latency)
