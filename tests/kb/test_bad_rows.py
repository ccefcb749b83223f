"""Bad rows of a data file (issue 22): every problem is counted under a kind that reads as words ("unknown label",
"unknown country", not the ", field" a place left behind), and a release that needs a built-in field map is told
its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from culturekb._records import Problems, _kind, map_hint
from culturekb.errors import DataError
from culturekb.kb.cultures import default_registry
from culturekb.kb.loaders import canonical_label, known_culture
from culturekb.kb.schemes import get_scheme

RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"


def test_problem_kinds_read_as_words() -> None:
    problems = Problems("data.jsonl")
    scheme = get_scheme("cedar14")
    for line, value in ((2, "notalabel"), (4, "alsonot")):
        where = f"data.jsonl, line {line}"
        with problems.row(where):
            canonical_label(scheme, value, f"{where}, field 'label'")
    with problems.row("data.jsonl, line 5"):
        known_culture(default_registry(), "Atlantis!", "data.jsonl, line 5, field 'country'", what="country")
    assert [k for k, _, _ in problems.found] == ["unknown label", "unknown label", "unknown country"]
    with pytest.raises(DataError) as err:
        problems.finish()
    text = str(err.value)
    assert "- 2 x unknown label\n" in text and "- 1 x unknown country\n" in text
    assert "data.jsonl, line 2, field 'label': unknown label 'notalabel'" in text  # the row as its loader said it


def test_a_missing_field_is_its_own_kind() -> None:
    problems = Problems("d")
    problems.add("d, line 5", "d, line 5: field 'question' is missing or empty (Cedar asks a question)")
    problems.add("d, line 6", "d, line 6: duplicate id 'a' (first on line 1); ids must be unique")
    assert [k for k, _, _ in problems.found] == ["field is missing or empty", "duplicate id"]


def test_xed_without_its_map_is_told_to_use_it() -> None:
    from culturekb.workflows import load_data

    path = RELEASES / "xed" / "AnnotatedData" / "en-annotated.tsv"
    with pytest.raises(DataError) as err:
        load_data([path], scheme="plutchik8")
    text = str(err.value)
    assert "unknown field(s)" in text and "try --map xed" in text
    assert text.count("--map xed") == 1  # said once for the file, not once per row


def test_a_map_whose_detect_keys_are_half_there_is_suggested() -> None:
    assert "--map blend" in map_hint(["question", "en_question", "answer"], "China.json")
    assert map_hint(["id", "culture", "label"], "train.jsonl") == ""


def test_an_artemis_csv_reports_every_bad_row_or_skips_them(tmp_path: Path) -> None:
    from culturekb.kb.loaders import load_artemis_csv

    path = tmp_path / "artemis.csv"
    path.write_text("painting,art_style,emotion,utterance,language\n"
                    "a_one,Impressionism,awe,big sky,english\n"
                    "a_two,Impressionism,bliss,soft light,english\n"
                    "a_three,Impressionism,joyish,bright,english\n"
                    "a_four,Impressionism,fear,dark woods,klingon!\n"
                    "a_five,Impressionism,sadness,rain,english\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_artemis_csv(path)
    text = str(err.value)
    assert "3 bad row(s), 2 kind(s) of problem" in text
    assert "- 2 x unknown label\n" in text and "- 1 x unknown culture\n" in text
    assert f"{path}, line 3, column 'emotion': unknown label 'bliss'" in text and f"{path}, line 4" in text
    res = load_artemis_csv(path, on_bad_row="skip")
    assert sorted(s.metadata["image_id"] for s in res.samples) == ["a_five", "a_one"]
    assert [r["where"] for r in res.skipped] == [f"{path}, line {n}" for n in (3, 4, 5)]
    assert res.summary()["skipped_rows"] == list(res.skipped)


@pytest.mark.parametrize("detail", ["image 'a.jpg' not found at '/data/a.jpg'; pass --data-root",
                                    "image 'b.jpg' not found at /other/b.jpg; pass --data-root"])
def test_where_a_file_was_looked_for_is_no_part_of_the_kind(detail: str) -> None:
    assert _kind(detail) == "image not found"
