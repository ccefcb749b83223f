"""What the tests that build a small KB through `culturekb build` share: running the CLI, writing the data file,
the storm/garden images, and the build itself (precomputed concepts, lexicon judges, no model)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from culturekb.cli import app


def run_cli(*args: Any) -> Result:
    """`culturekb ARGS` in process (paths and numbers as text)."""
    return CliRunner().invoke(app, [str(a) for a in args])


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def storm_garden_rows(n: int, stormy: Callable[[int], bool], split: Callable[[int], str]) -> list[dict[str, Any]]:
    """`n` English images: stormy ones are fear (concepts storm, sea), the others contentment (garden, sea)."""
    rows = []
    for i in range(n):
        storm = stormy(i)
        rows.append({"id": f"img{i}::en", "culture": "en", "label": "fear" if storm else "contentment",
                     "concepts": ["storm", "sea"] if storm else ["garden", "sea"],
                     "explanations": ["a frightening storm" if storm else "a calm garden"], "split": split(i),
                     "metadata": {"image_id": f"img{i}"}})
    return rows


def build_kb(root: Path, data: Path, *extra: Any) -> tuple[Path, Result]:
    """`culturekb build` of `data` into ``root/kb`` (precomputed concepts, lexicon judges, cache in ``root/cache``);
    fails the test when the build does."""
    kb = root / "kb"
    res = run_cli("build", data, "--out", kb, "--concepts", "precomputed", "--judges", "lexicon,lexicon",
                  "--cache-dir", root / "cache", *extra)
    assert res.exit_code == 0, res.output
    return kb, res
