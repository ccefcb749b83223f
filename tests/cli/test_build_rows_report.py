"""`culturekb build` on annotation-level and messy rows (issue 22): a six-culture set in which one scenario repeats in
one culture with a majority label and another with a tied one builds, and its build report (Markdown, JSON and the
printed summary) names the aggregated and the tie-dropped items with their file and lines; `--on-bad-row` reports
every bad row of the file at once (fail) or leaves them out and lists them (skip)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb.cultures import reset_default_registry

CULTURES = ("en", "de", "es", "zh", "ru", "hi")
TEXTS = {
    "sc1": ("The market at dawn smelled of bread and coffee, and my grandmother laughed with the bakers.", "joy"),
    "sc2": ("The train left without me in the rain and my phone was dead at the station.", "sadness"),
    "sc3": ("A dog barked in the dark garden while the storm broke the window.", "fear"),
}


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    reset_default_registry()  # de, ru, hi ... are registered from the data; later tests must not see them
    yield
    reset_default_registry()


def _six_cultures(path: Path, extra: list[dict[str, Any]]) -> Path:
    rows: list[dict[str, Any]] = [{"id": f"{c}-{sc}", "culture": c, "label": label, "text": text, "split": "train",
             "metadata": {"image_id": sc}} for c in CULTURES for sc, (text, label) in TEXTS.items()]
    rows += extra  # metadata.image_id: the scenario, which groups a scenario's rows in one culture
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _build(data: Path, out: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["build", str(data), "--out", str(out), "--scheme", "joy,sadness,fear,anger",
                                   "--no-calibrate", "--min-support", "1", "--judges", "lexicon,lexicon",
                                   "--cache-dir", str(out.parent / "cache"), *extra])
    return res.exit_code, res.output


def test_six_culture_build_names_the_aggregated_and_tie_dropped_rows(tmp_path: Path) -> None:
    data = _six_cultures(tmp_path / "six.jsonl", [
        # es repeats sc2 twice more: sadness 2 : fear 1, aggregated to sadness
        {"id": "es-sc2-b", "culture": "es", "label": "sadness", "text": TEXTS["sc2"][0],
         "split": "train", "metadata": {"image_id": "sc2"}},
        {"id": "es-sc2-c", "culture": "es", "label": "fear", "text": TEXTS["sc2"][0],
         "split": "train", "metadata": {"image_id": "sc2"}},
        # zh repeats sc3 with another label: fear 1 : anger 1, tied, dropped for zh
        {"id": "zh-sc3-b", "culture": "zh", "label": "anger", "text": TEXTS["sc3"][0],
         "split": "train", "metadata": {"image_id": "sc3"}},
    ])
    code, printed = _build(data, tmp_path / "kb")
    assert code == 0, printed
    md = (tmp_path / "kb" / "build_report.md").read_text(encoding="utf-8")
    report = json.loads((tmp_path / "kb" / "build_report.json").read_text(encoding="utf-8"))
    # es-sc2 is line 8 of the file (cultures in order, three scenarios each), its repeats lines 19 and 20;
    # zh-sc3 is line 12, its repeat line 21
    for text in (md, printed):
        assert "## Rows of the data files" in text
        assert "`es-sc2` (es): six.jsonl lines 8, 19, 20 -> sadness 2, fear 1" in text
        assert "`sc3` (zh): six.jsonl lines 12, 21 -> fear 1, anger 1" in text
        assert "texts aggregated from rows that repeat them in one culture (majority label): 1 (2 rows merged" in text
        assert "Texts dropped for lack of a majority label, per culture:" in text and "zh 1" in text
        assert "Images dropped" not in text
    source = report["sources"][0]
    assert source["file"] == "six.jsonl" and source["rows_read"] == 21 and source["aggregated_rows"] == 2
    assert [a["id"] for a in source["aggregated_items"]] == ["es-sc2"]
    assert source["tie_dropped_items"] == [{"item": "sc3", "culture": "zh", "labels": {"fear": 1, "anger": 1},
                                            "rows": ["six.jsonl, line 12", "six.jsonl, line 21"]}]
    assert report["per_culture"]["zh"]["samples"] == 2 and report["per_culture"]["es"]["samples"] == 3


def _with_bad_rows(tmp_path: Path) -> Path:
    bad: list[dict[str, Any]] = [{"id": f"x{i}", "culture": "en", "label": "boredom", "text": "a quiet afternoon",
            "split": "train", "metadata": {"image_id": f"x{i}"}} for i in range(4)]
    bad.append({"id": "k1", "culture": "klingon!", "label": "joy", "text": "a feast",
                "split": "train", "metadata": {"image_id": "k1"}})
    return _six_cultures(tmp_path / "bad.jsonl", bad)


def test_on_bad_row_fail_reports_every_problem_at_once(tmp_path: Path) -> None:
    code, printed = _build(_with_bad_rows(tmp_path), tmp_path / "kb")
    assert code == 2
    text = " ".join(printed.split())
    assert "5 bad row(s), 2 kind(s) of problem" in text
    assert "- 4 x unknown label" in text and "- 1 x unknown culture" in text
    assert "bad.jsonl, line 19" in text and "bad.jsonl, line 23" in text
    assert "--on-bad-row skip" in text
    assert not (tmp_path / "kb").exists()  # nothing half-written


def test_on_bad_row_skip_lists_the_skipped_rows_in_the_report(tmp_path: Path) -> None:
    code, printed = _build(_with_bad_rows(tmp_path), tmp_path / "kb", "--on-bad-row", "skip")
    assert code == 0, printed
    report = json.loads((tmp_path / "kb" / "build_report.json").read_text(encoding="utf-8"))
    skipped = report["sources"][0]["skipped_rows"]
    assert report["sources"][0]["skipped_rows_total"] == 5 and len(skipped) == 5
    assert skipped[0]["where"] == "bad.jsonl, line 19" and "unknown label 'boredom'" in skipped[0]["problem"]
    md = (tmp_path / "kb" / "build_report.md").read_text(encoding="utf-8")
    assert "bad rows skipped (--on-bad-row skip): 5" in md and "bad.jsonl line 23: field 'culture'" in md
    assert report["samples"] == 18


def test_on_bad_row_refuses_an_unknown_rule(tmp_path: Path) -> None:
    code, printed = _build(_with_bad_rows(tmp_path), tmp_path / "kb", "--on-bad-row", "ignore")
    assert code == 2 and "use fail or skip" in printed


def test_a_json_file_holding_json_lines_builds(tmp_path: Path) -> None:
    """The label-word pass reads the data with the loader's own reader: a .json that holds JSON Lines (issue 22)
    was refused there ("invalid JSON (Extra data at line 2) while reading its paired label columns")."""
    data = _six_cultures(tmp_path / "six.json", [])
    code, printed = _build(data, tmp_path / "kb")
    assert code == 0, printed
    assert "Extra data" not in printed
    assert json.loads((tmp_path / "kb" / "build_report.json").read_text(encoding="utf-8"))["samples"] == 18
