"""Concept quality before/after: tuples per culture, the top concepts by support with the ones judged junk, and
what the extractor dropped per reason (issue 11, deliverable 3, lexical part).

The junk judgements are a person's (here: the AI model's) reading of each top list, kept in a JSON file
(culture -> list of concepts judged junk: function words, instruction words, emotion words, names, fragments,
generic judgements); the script only counts them, so anyone can re-read the lists and change the judgement.

    python benchmarks/concept_quality.py --before KB_BEFORE --after KB_AFTER \
        --junk benchmarks/results/concept_quality_junk.json --name artemis [--exclude-styles DATA.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def _tuples(kb: Path, exclude: set[str]) -> dict[str, list[tuple[str, int]]]:
    by: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for line in (kb / "tuples.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        if row["concept"] not in exclude:
            by[row["culture"]].append((row["concept"], int(row["support"])))
    return {c: sorted(rows, key=lambda r: (-r[1], r[0])) for c, rows in sorted(by.items())}


def _styles(data: Path | None) -> set[str]:
    if data is None:
        return set()
    from culturekb.text.normalise import normalise_concept

    with data.open(encoding="utf-8") as fh:
        return {c for r in csv.DictReader(fh) if (c := normalise_concept(r["art_style"].replace("_", " ")))}


def main() -> None:
    """Print the Markdown tables for one dataset."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--junk", type=Path, required=True)
    parser.add_argument("--name", required=True, help="dataset key in the junk file")
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--exclude-styles", type=Path, help="ArtEmis CSV: leave its art-style concepts out")
    args = parser.parse_args()
    styles = _styles(args.exclude_styles)
    junk: dict[str, Any] = json.loads(args.junk.read_text("utf-8"))[args.name]
    lines: list[str] = []
    rows = []
    for when, kb in (("before", args.before), ("after", args.after)):
        tuples = _tuples(kb, styles)
        for culture, items in tuples.items():
            top = items[: args.top]
            bad = set(junk[when].get(culture, []))
            unknown = bad - {c for c, _ in top}
            if unknown:
                raise SystemExit(f"{args.name} {when} {culture}: judged junk, not in the top list: {sorted(unknown)}")
            n_bad = sum(1 for c, _ in top if c in bad)
            rows.append((culture, when, len(items), n_bad, len(top)))
            shown = ", ".join(f"~~{c}~~ ({s})" if c in bad else f"{c} ({s})" for c, s in top)
            lines.append(f"- **{culture}, {when}** ({n_bad}/{len(top)} junk): {shown}")
    print("| culture | build | tuples | junk in top | share |")  # noqa: T201
    print("|---|---|---:|---:|---:|")  # noqa: T201
    for culture, when, n, n_junk, k in sorted(rows, key=lambda r: (r[0], r[1] != "before")):
        print(f"| {culture} | {when} | {n} | {n_junk}/{k} | {n_junk / max(k, 1):.0%} |")  # noqa: T201
    print()  # noqa: T201
    print("\n".join(lines))  # noqa: T201
    report = json.loads((args.after / "build_report.json").read_text("utf-8")).get("dropped_concepts")
    if report:
        print("\n| culture | reason | count | distinct | most frequent |\n|---|---|---:|---:|---|")  # noqa: T201
        for culture, reasons in report["per_culture"].items():
            for reason, row in reasons.items():
                words = ", ".join(f"{w} ({n})" for w, n in row["top"])
                print(f"| {culture} | {reason} | {row['count']} | {row['distinct']} | {words} |")  # noqa: T201


if __name__ == "__main__":
    main()
