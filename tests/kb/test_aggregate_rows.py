"""Annotation-level rows in sample files (issue 22 item 4): rows repeating an item in one culture are aggregated
by the ArtEmis rule (majority; a tied top label drops the item, counted), in JSONL and JSON alike; the load report
names them; --aggregate none refuses them with file and lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturekb.errors import DataError
from culturekb.workflows import load_data


def _rows() -> list[dict[str, object]]:
    return [
        {"id": "s1-a", "image": "s1", "culture": "en", "label": "joy", "explanation": "a party", "split": "train"},
        {"id": "s1-b", "image": "s1", "culture": "en", "label": "sadness", "explanation": "a loss", "split": "train"},
        {"id": "s1-c", "image": "s1", "culture": "en", "label": "joy", "explanation": "friends", "split": "train"},
        {"id": "s2-a", "image": "s2", "culture": "en", "label": "fear", "split": "train"},
        {"id": "s2-b", "image": "s2", "culture": "en", "label": "anger", "split": "train"},
        {"id": "s1-zh", "image": "s1", "culture": "zh", "label": "sadness", "split": "train"},
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_repeated_items_are_aggregated_by_majority(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"six{suffix}"
    rows = _rows()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) if suffix == ".jsonl" else json.dumps(rows),
                    encoding="utf-8")
    samples, report = load_data([path], scheme="plutchik8")
    by = {(s.metadata["image_id"], s.culture): s for s in samples}
    s1 = by[("s1", "en")]
    assert s1.label == "joy" and s1.metadata["label_counts"] == {"joy": 2, "sadness": 1}
    assert s1.explanations == ["a party", "a loss", "friends"] and len(s1.metadata["aggregated_from"]) == 3
    assert ("s2", "en") not in by  # fear 1 : anger 1, tied: dropped and counted
    assert by[("s1", "zh")].label == "sadness"
    source = report["sources"][0]
    assert source["aggregated_rows"] == 2 and report["dropped_no_majority"]["en"] == 1  # s1's 3 rows -> 1
    assert set(source["aggregated_items"]) == {"s1-a"}


def test_aggregate_none_refuses_with_file_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "six.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_data([path], scheme="plutchik8", aggregate="none")
    text = str(err.value)
    assert "2 item(s) appear more than once" in text and f"{path}, line 1" in text and f"{path}, line 3" in text
