"""Knowledge coverage of an `culturekb eval artemculture` run: the share of test samples that got at least one tuple.

Coverage is read from the run's ``predictions.jsonl`` (one record per setting and sample; ``prediction.tuples_used``
lists the ids of the tuples put in the prompt), per culture and overall, for one setting (default ``know``).

With ``--kb`` and ``--data``, the test samples' lookups are redone through the KB's own index (the Augmenter the
run used) to tell how each sample was covered: by an exact concept match, or only by semantic (embedding) matches.
``--exact-only LANGS`` then also reports the coverage that counts semantic matches as misses for those data
languages: for a language the embedder was not trained on (the ``use`` embedder has no Hindi), cosine scores are
not evidence of meaning.

Usage::

    python benchmarks/multilingual_coverage.py RUN/predictions.jsonl [--setting know]
        [--kb KB --data SAMPLE.jsonl [--exact-only hi]] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def coverage_from_predictions(path: Path, setting: str = "know") -> dict[str, dict[str, float]]:
    """Per culture (and ``overall``): samples, samples with >= 1 tuple used, and their share, for one setting."""
    total: Counter[str] = Counter()
    covered: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record["setting"] != setting:
            continue
        pred = record["prediction"]
        total[pred["culture"]] += 1
        covered[pred["culture"]] += bool(pred["tuples_used"])
    if not total:
        raise SystemExit(f"{path}: no predictions for setting {setting!r}")
    return _table(total, covered)


def top_concepts(path: Path, setting: str = "know", top: int = 8) -> dict[str, list[tuple[str, int]]]:
    """Per culture, the concepts whose tuples were used most often in `setting` (what the knowledge was about)."""
    used: dict[str, Counter[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else None
        if record is None or record["setting"] != setting:
            continue
        pred = record["prediction"]
        for tid in pred["tuples_used"]:
            used.setdefault(pred["culture"], Counter())[tid.split("::", 1)[-1]] += 1
    return {c: v.most_common(top) for c, v in sorted(used.items())}


def _table(total: Counter[str], covered: Counter[str]) -> dict[str, dict[str, float]]:
    rows = {c: {"n": total[c], "covered": covered[c], "share": covered[c] / total[c]} for c in sorted(total)}
    n, k = sum(total.values()), sum(covered.values())
    rows["overall"] = {"n": n, "covered": k, "share": k / n}
    return rows


def match_kinds(kb_dir: Path, data: Path, exact_only: set[str], split: str = "test") -> dict[str, Any]:
    """Per culture: samples covered by an exact match, only by semantic ones, not at all; and the coverage when
    semantic matches do not count for the cultures in `exact_only`."""
    from culturekb.kb.loaders import load_samples_jsonl
    from culturekb.workflows import open_augmenter

    augmenter = open_augmenter(kb_dir)
    samples = [s for s in load_samples_jsonl(data, scheme=augmenter.retriever.kb.scheme).samples if s.split == split]
    kinds: dict[str, Counter[str]] = {}
    total: Counter[str] = Counter()
    strict: Counter[str] = Counter()
    for sample, aug in zip(samples, augmenter.augment_many(samples, mode="know"), strict=True):
        found = {m.kind for m in aug.matches}
        kind = "exact" if "exact" in found else "semantic only" if found else "none"
        kinds.setdefault(sample.culture, Counter())[kind] += 1
        total[sample.culture] += 1
        strict[sample.culture] += kind == "exact" or (kind == "semantic only" and sample.culture not in exact_only)
    return {"kinds": {c: dict(v) for c, v in sorted(kinds.items())}, "exact_only": sorted(exact_only),
            "coverage_exact_only": _table(total, strict)}


def _markdown(table: dict[str, dict[str, float]]) -> str:
    lines = ["| culture | test samples | with knowledge | share |", "|---|---:|---:|---:|"]
    lines += [f"| {c} | {v['n']:.0f} | {v['covered']:.0f} | {v['share']:.1%} |" for c, v in table.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the coverage tables (Markdown), optionally write them as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("predictions", type=Path, help="predictions.jsonl of an eval run")
    ap.add_argument("--setting", default="know")
    ap.add_argument("--kb", type=Path, help="the KB the run used (for match kinds)")
    ap.add_argument("--data", type=Path, help="the sample JSONL the run read (for match kinds)")
    ap.add_argument("--exact-only", default="", help="comma list of cultures whose semantic matches do not count")
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = ap.parse_args(argv)

    out: dict[str, Any] = {"setting": args.setting, "coverage": coverage_from_predictions(args.predictions,
                                                                                          args.setting)}
    print(f"Knowledge coverage ({args.setting}), from {args.predictions}:\n\n{_markdown(out['coverage'])}\n")
    out["top_concepts"] = top_concepts(args.predictions, args.setting)
    print("Concepts whose tuples were used most (times used):\n")
    print("| culture | concepts |\n|---|---|")
    for c, pairs in out["top_concepts"].items():
        print(f"| {c} | {', '.join(f'{k} ({n})' for k, n in pairs)} |")
    print()
    if args.kb is not None:
        if args.data is None:
            ap.error("--kb needs --data")
        exact_only = {c.strip() for c in args.exact_only.split(",") if c.strip()}
        out.update(match_kinds(args.kb, args.data, exact_only))
        print("How the test samples were covered (know):\n")
        print("| culture | exact | semantic only | none |\n|---|---:|---:|---:|")
        for c, v in out["kinds"].items():
            print(f"| {c} | {v.get('exact', 0)} | {v.get('semantic only', 0)} | {v.get('none', 0)} |")
        print(f"\nCoverage with semantic matches not counted for {sorted(exact_only) or 'no culture'}:\n")
        print(_markdown(out["coverage_exact_only"]))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
