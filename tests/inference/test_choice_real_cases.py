"""Real answers read by hand (tests/fixtures/real_answers/cases.jsonl; sources and licences in the NOTICE.md
there): each row holds a model's answer as published, the option a careful reader takes from it (`read`, null when
the answer commits to none) and why. culturekb's reader must read each the same."""

import json
from pathlib import Path

import pytest

from culturekb.inference.choices import parse_choice

CASES = Path(__file__).parents[1] / "fixtures" / "real_answers" / "cases.jsonl"
ROWS = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_case_names_its_source_and_why():
    assert len(ROWS) >= 5
    for row in ROWS:
        assert row["source"].count("@") == 1 and row["id"] and row["note"], row["id"]
        assert row["read"] is None or row["read"] in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:len(row["options"])]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['model']}:{r['id'][-24:]}" for r in ROWS])
def test_read_as_a_careful_reader_reads_it(row):
    got = parse_choice(row["answer"], row["options"], thinking=row["reasoning"] == "think")
    assert got.letter == row["read"], f"{row['note']}: read {got.letter} ({got.path})"
