"""Issue 27 items 4 and 5: are rationales on topic, and does every language yield concepts?

    python benchmarks/rationale_topic.py threshold          # embedding thresholds (benchmarks/data/topic_pairs.jsonl)
    python benchmarks/rationale_topic.py build OUT          # build the demo KB into OUT/kb (flagged rate, kappa, ...)
    python benchmarks/rationale_topic.py sample KB          # the 100 rationales to read (seed 27), TSV on stdout
    python benchmarks/rationale_topic.py concepts           # concepts per language: demo data and the Thai sample
    python benchmarks/rationale_topic.py score BEFORE AFTER # the reading verdicts + two build reports -> results

The reading itself is by hand: `sample` prints the rationales, a person writes a verdict per line (on / off /
junk) into benchmarks/results/rationale_topic_{before,after}.tsv; `score` counts them. Results:
benchmarks/results/rationale_topic.{md,json}.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
THAI = ROOT.parent / "tests" / "fixtures" / "wisesight_th" / "wisesight_sample.jsonl"


def threshold() -> dict:
    from culturekb.models.factory import make_embedder

    pairs = [json.loads(line) for line in (ROOT / "data" / "topic_pairs.jsonl").read_text("utf-8").splitlines()]
    y = np.array([p["on_topic"] for p in pairs])
    out = {}
    for spec in ("use", "minilm"):
        emb = make_embedder(spec)
        s = np.asarray(emb.encode([p["sentence"] for p in pairs]))
        c = np.asarray(emb.encode([p["concept"] for p in pairs]))
        cos = (s / np.linalg.norm(s, axis=1, keepdims=True) * (c / np.linalg.norm(c, axis=1, keepdims=True))).sum(1)
        t = float(np.ceil(cos[~y].max() * 100) / 100 + 0.0)
        out[emb.id] = {"threshold": t, "off_topic_max": round(float(cos[~y].max()), 4),
                       "on_topic_recall": f"{int((cos[y] >= t).sum())}/{int(y.sum())}", "pairs": len(pairs)}
    print(json.dumps(out, indent=1))
    return out


def build(out: str) -> dict:
    from culturekb.demo import DEMO_EMBEDDER, demo_dataset
    from culturekb.models.factory import make_embedder
    from culturekb.workflows import build_from_files

    data = demo_dataset()
    built = build_from_files([data.sample], Path(out) / "kb", cache_dir=Path(out) / "cache", progress=False,
                             cultures_file=data.cultures, scheme=str(data.scheme), embedder=DEMO_EMBEDDER,
                             loaded_embedder=make_embedder(DEMO_EMBEDDER))
    r = built.report
    keys = ("tuples", "flagged", "flagged_rate", "judge_kappa", "no_evidence", "no_evidence_by_judge",
            "evidence_sources", "rationale_topic", "cultures_without_tuples")
    print(json.dumps({k: r.get(k) for k in keys}, indent=1, ensure_ascii=False))
    return r


def _pairs(kb_dir: str) -> list[tuple[str, str, str, str]]:
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(kb_dir)
    return [(t.culture, t.concept, t.label, r) for t in sorted(kb.tuples, key=lambda t: (t.culture, t.concept))
            for r in t.rationales]


def sample(kb_dir: str) -> None:
    for i, (c, k, lab, r) in enumerate(random.Random(27).sample(_pairs(kb_dir), 100)):
        sys.stdout.write(f"{i}\t{c}\t{k}\t{lab}\t\t\t{r}\n")


def concepts() -> dict:
    from culturekb.demo import demo_dataset
    from culturekb.kb.schema import Sample
    from culturekb.text.concepts import TextConceptExtractor

    ex = TextConceptExtractor()
    sets = {"demo (BRIGHTER sample)": [json.loads(x) for x in demo_dataset().sample.read_text("utf-8").splitlines()],
            "Wisesight Thai sample": [json.loads(x) for x in THAI.read_text("utf-8").splitlines()]}
    out: dict = {}
    for name, rows in sets.items():
        per: dict = {}
        by = Counter(r["culture"] for r in rows)
        found = ex.extract([Sample(id=r["id"], culture=r["culture"], text=r["text"], label=r["label"]) for r in rows])
        for r, cs in zip(rows, found, strict=True):
            row = per.setdefault(r["culture"], {"samples": by[r["culture"]], "with_concepts": 0, "concepts": set()})
            row["with_concepts"] += bool(cs)
            row["concepts"].update(cs)
        out[name] = {c: {"samples": v["samples"], "with_concepts": v["with_concepts"],
                         "distinct_concepts": len(v["concepts"]), "examples": sorted(v["concepts"])[:8]}
                     for c, v in sorted(per.items())}
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return out


def _verdicts(path: Path) -> Counter:
    rows = [r for r in csv.reader(path.open(encoding="utf-8"), delimiter="\t") if r and not r[0].startswith("#")]
    return Counter(r[4] for r in rows[1:])


def score(before: str, after: str) -> None:
    reports = {k: json.loads((Path(p) / "kb" / "build_report.json").read_text("utf-8"))
               for k, p in (("before", before), ("after", after))}
    reads = {k: _verdicts(RESULTS / f"rationale_topic_{k}.tsv") for k in ("before", "after")}
    result: dict = {"read": {}, "builds": {}, "concepts": concepts(), "thresholds": threshold()}
    for k in ("before", "after"):
        n = sum(reads[k].values())
        result["read"][k] = {**reads[k], "off_topic_rate": reads[k]["off"] / n,
                             "off_or_junk_rate": (reads[k]["off"] + reads[k]["junk"]) / n}
        r = reports[k]
        worst = max(r["no_evidence_by_judge"].values())
        result["builds"][k] = {"tuples": r["tuples"], "flagged_rate": r["flagged_rate"],
                               "judge_kappa": r["judge_kappa"], "no_evidence_by_judge": r["no_evidence_by_judge"],
                               "lexicon_no_evidence_share": round(worst / r["tuples"], 4),
                               "rationales": r["rationales"], "rationale_topic": r.get("rationale_topic")}
    (RESULTS / "rationale_topic.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(json.dumps(result["read"], indent=1), json.dumps(result["builds"], indent=1))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    steps: dict[str, Any] = {"threshold": threshold, "build": build, "sample": sample, "concepts": concepts,
                             "score": score}
    steps[cmd](*args)
