"""Cut the small Cedar-style and RICE-VL-style samples shipped in ``culturekb/data/demo/{cedar,ricevl}`` from the
files `make_cedar_ricevl_data.py` makes out of the real data under ../shared/data.

Run ``python benchmarks/make_cedar_ricevl_data.py --out DIR`` first, then
``python benchmarks/make_cedar_ricevl_sample.py --bench DIR --demo culturekb/data/demo``. Deterministic: rows are
chosen by the smallest SHA-1 of their id within each stratum; the NOTICE.md of each folder says what is real.

- cedar/cedar_sample.jsonl: every ArtELingo item (multimodal where the painting's public-domain image exists) and
  the first 18 FindingEmo text items; images/ holds the two paintings, at most 384 px (copied from the CulturalToM
  sample, which made them from the same WikiArt files).
- ricevl/vqa_sample.jsonl: 2 VULCA items per (country, format) (30); ricevl/cue_metadata_sample.jsonl: 6 VULCA
  artworks per country (30) for the kb-cues setting.
- ricevl/grounding_sample.jsonl + collages/: the 4 smallest collages (each panel a public-domain WikiArt image, the
  gold box exactly the named artist's panel).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _key(row: dict[str, Any]) -> str:
    return hashlib.sha1(str(row["id"]).encode("utf-8")).hexdigest()


def _per(rows: list[dict[str, Any]], stratum: tuple[str, ...], n: int) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in stratum)].append(r)
    return [r for g in sorted(groups) for r in sorted(groups[g], key=_key)[:n]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, required=True, help="the --out folder of make_cedar_ricevl_data.py")
    ap.add_argument("--demo", type=Path, default=Path("culturekb/data/demo"))
    args = ap.parse_args()

    cedar = _rows(args.bench / "cedar" / "cedar_test.jsonl")
    art = [r for r in cedar if r["source"] == "ArtELingo sample"]
    for r in art:
        if r.get("image"):
            r["image"] = f"images/{r['painting']}.jpg"
    emo = sorted((r for r in cedar if r["source"] != "ArtELingo sample"), key=_key)[:18]
    _write(args.demo / "cedar" / "cedar_sample.jsonl", art + emo)
    (args.demo / "cedar" / "images").mkdir(exist_ok=True)
    for r in art:
        if r.get("image"):
            shutil.copyfile(args.demo / "culturaltom" / r["image"], args.demo / "cedar" / r["image"])

    ricevl = args.bench / "ricevl"
    _write(args.demo / "ricevl" / "vqa_sample.jsonl", _per(_rows(ricevl / "vqa_test.jsonl"), ("country", "format"), 2))
    _write(args.demo / "ricevl" / "cue_metadata_sample.jsonl", _per(_rows(ricevl / "cue_metadata.jsonl"),
                                                                    ("country",), 6))
    grounding = _rows(ricevl / "grounding.jsonl")
    smallest = sorted(grounding, key=lambda r: (ricevl / r["image"]).stat().st_size)[:4]
    smallest.sort(key=lambda r: r["id"])
    (args.demo / "ricevl" / "collages").mkdir(parents=True, exist_ok=True)
    for r in smallest:
        shutil.copyfile(ricevl / r["image"], args.demo / "ricevl" / r["image"])
    _write(args.demo / "ricevl" / "grounding_sample.jsonl", smallest)


if __name__ == "__main__":
    main()
