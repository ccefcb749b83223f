"""Public releases read as they are (issue 22): ToMBench, Hi-ToM and BLEnD samples (tests/fixtures/releases, with
their licences) load with no conversion, through the built-in field maps; every bad row is reported at once or
skipped and listed; formats are detected whatever the extension."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from culturekb._records import LoadReport, parse_field_map, read_records
from culturekb.errors import ConfigError, DataError
from culturekb.evals.commet.stories import load_story_turns
from culturekb.evals.culturaltom.data import load_culturaltom
from culturekb.evals.ricevl.data import load_ricevl_vqa

RELEASES = Path(__file__).resolve().parents[1] / "fixtures" / "releases"


def test_tombench_as_released_loads_for_culturaltom_with_no_map_named() -> None:
    report = LoadReport()
    items = load_culturaltom(RELEASES / "tombench" / "data", report=report)
    assert len(items) == 24 and report.field_map == "tombench"
    two = [s for s in items if len(s.options or []) == 2]
    assert two and all(s.label in ("A", "B") for s in two)  # NaN options C/D dropped
    assert all(not o.startswith(("A. ", "B. ")) for s in items for o in s.options or [])
    first = items[0]
    assert first.id == "Faux-pas Recognition Test:1" and first.metadata["task"] == "Faux-pas Recognition Test"
    assert first.metadata["ability"].startswith("Non-Literal Communication")
    assert first.metadata["in_matrix"] is False and first.metadata["level"] is None
    assert report.defaults["id"] == 24 and report.defaults["region"] == 24
    # one release answer is "A. "
    assert all(s.label is not None and s.label in "ABCD" and len(s.label) == 1 for s in items)


def test_tombench_chinese_keys_through_the_named_map() -> None:
    items = load_culturaltom(RELEASES / "tombench" / "data", field_map=parse_field_map("tombench-zh"))
    assert items[0].metadata["language"] == "zh" and "故事" not in items[0].metadata
    assert any("。" in (s.text or "") for s in items)


def test_tombench_rows_play_as_one_turn_commet_stories() -> None:
    stories = load_story_turns(RELEASES / "tombench" / "data")
    assert len(stories) == 24
    turn = stories[0].turns[0]
    assert "\nA. " in turn.question and turn.answers["any"][0] in ("A", "B", "C", "D")
    assert stories[0].category == "non-literal communication"


def test_hitom_fifteen_options_in_one_string_and_answers_given_as_text() -> None:
    items = load_culturaltom(RELEASES / "hitom" / "Hi-ToM_data.json")
    assert len(items) == 18 and all(len(s.options or []) == 15 for s in items)
    s = items[0]
    assert s.options is not None and s.label is not None
    assert s.options[ord(s.label) - ord("A")] == json.loads(
        (RELEASES / "hitom" / "Hi-ToM_data.json").read_text(encoding="utf-8"))["data"][0]["answer"]


def test_blend_object_keyed_by_id_loads_for_ricevl_vqa() -> None:
    report = LoadReport()
    items = load_ricevl_vqa(RELEASES / "blend" / "data" / "annotations", report=report, check_images=False)
    assert report.field_map == "blend" and len(items) == 12  # 18 ids, 6 with no annotated answer left out
    assert sum("no reference answer" in n for n in report.notes) == 6
    s = items[0]
    assert s.id == "China_data/Al-en-01" and s.culture == "China" and s.metadata["category"] == "unspecified"
    assert "cheese stick" in s.metadata["reference_answers"] and "奶酪棒" in s.metadata["reference_answers"]


def test_a_json_file_holding_json_lines_is_read_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "tom.json"
    rows = [{"id": f"q{i}", "question": "Who knows? (a) Ann (b) Bo", "answer": "b", "task": "x"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = LoadReport()
    items = load_culturaltom(path, field_map=parse_field_map("id=id"), report=report)
    assert any("holds JSON Lines" in n for n in report.notes)
    assert items[0].options == ["Ann", "Bo"] and items[0].question == "Who knows?" and items[0].label == "B"


def test_every_bad_row_is_reported_at_once_or_skipped(tmp_path: Path) -> None:
    good = {"id": "ok", "question": "Q?", "options": ["a", "b"], "answer": "A", "task": "mental state attribution",
            "level": 1, "image_source": "none", "region": "CN"}
    rows = [good, {**good, "id": "x1", "answer": "Z"}, {**good, "id": "x2", "answer": "Z"},
            {**good, "id": "x3", "options": ["only one"]}]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_culturaltom(path)
    text = str(err.value)
    assert "3 bad row(s), 2 kind(s)" in text and "line 2" in text and "line 3" in text and "line 4" in text
    assert "--on-bad-row skip" in text
    report = LoadReport()
    kept = load_culturaltom(path, on_bad_row="skip", report=report)
    assert [s.id for s in kept] == ["ok"] and len(report.skipped) == 3


@pytest.mark.parametrize("loader", ["culturaltom", "story_turns", "ricevl_vqa"])
def test_a_load_whose_every_row_is_skipped_says_so_and_why(loader: str, tmp_path: Path) -> None:
    """--on-bad-row skip leaving nothing: the rows were skipped and for what (issue 24: Cedar said "no item is left
    after keeping languages [] and modalities []", CulturalToM pointed at a report no run writes)."""
    loaders: dict[str, Callable[..., Any]] = {"culturaltom": load_culturaltom, "story_turns": load_story_turns,
                                              "ricevl_vqa": load_ricevl_vqa}
    load = loaders[loader]
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x1"}\n{"id": "x2"}\n', encoding="utf-8")
    with pytest.raises(DataError) as err:
        load(path, on_bad_row="skip")
    text = str(err.value)
    assert "no item is left: all 2 bad row(s) were skipped (--on-bad-row skip)" in text, text
    assert "line 1" in text and "line 2" in text and "run report" not in text


def test_field_maps_inline_file_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("qid,Q,ans\n1,Pick one (a) x (b) y,a\n", encoding="utf-8")
    items = load_culturaltom(path, field_map=parse_field_map("id=qid,question=Q,answer=ans"))
    assert (items[0].id, items[0].options, items[0].label) == ("1", ["x", "y"], "A")
    map_file = tmp_path / "m.toml"
    map_file.write_text('[fields]\nid = "qid"\nquestion = "Q"\nanswer = "ans"\n[defaults]\nregion = "JP"\n',
                        encoding="utf-8")
    assert load_culturaltom(path, field_map=parse_field_map(str(map_file)))[0].metadata["region"] == "JP"
    with pytest.raises(ConfigError, match="not a built-in map"):
        parse_field_map("no-such-map")
    records = list(read_records(path, parse_field_map("line=@line,file=@file")))
    assert records[0].data["line"] == 2 and records[0].data["file"] == "r"


def test_a_wide_label_table_is_written_on_its_side() -> None:
    from culturekb.evals.reports import WIDE_COLUMNS, Table, render_markdown_table

    labels = [f"label{i}" for i in range(323)]
    table = Table("propensity", ["setting", *labels], [["orig", *range(323)], ["know", *range(323)]])
    lines = render_markdown_table(table).splitlines()
    assert lines[0] == "| setting | orig | know |" and len(lines) == 2 + 323
    assert max(len(line.split("|")) for line in lines) <= WIDE_COLUMNS


def test_compound_labels_take_their_first_label_of_the_scheme() -> None:
    from culturekb.kb.loaders import canonical_label
    from culturekb.kb.schemes import get_scheme

    scheme = get_scheme("plutchik8")
    assert canonical_label(scheme, "Joy & Surprise", "x") == "joy"
    assert canonical_label(scheme, "nostalgia / sadness", "x") == "sadness"
    with pytest.raises(DataError, match="missing or empty"):
        canonical_label(scheme, None, "row 3", "category")


def test_xed_headerless_tsv_builds_samples_through_its_map() -> None:
    from culturekb.workflows import load_data

    path = RELEASES / "xed" / "AnnotatedData" / "en-annotated.tsv"
    samples, report = load_data([path], scheme="plutchik8", field_map="xed")
    assert len(samples) == 16 and {s.culture for s in samples} == {"en"}
    by_id = {s.id: s for s in samples}
    assert by_id["en-annotated:2"].label == "anger"  # "1, 4, 7": a compound label, its first label counts
    assert by_id["en-annotated:3"].label == "trust"  # "8, 1"
    assert report["sources"][0]["rows_read"] == 16


def test_tombench_runs_through_eval_culturaltom_and_commet_with_only_the_data_path(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.testing import ScriptedOpenAIServer

    data = str(RELEASES / "tombench" / "data")
    runner = CliRunner()
    res = runner.invoke(app, ["eval", "culturaltom", data, "--out", str(tmp_path / "tom")])
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "tom" / "run.json").read_text(encoding="utf-8"))
    assert run["data"]["field_map"] == "tombench" and run["data"]["items"] == 24 and "Data read" in res.output
    with ScriptedOpenAIServer(lambda body: "A") as server:
        res = runner.invoke(app, ["eval", "commet", data, "--model", "openai:m", "--base-url", server.base_url,
                                  "--out", str(tmp_path / "commet")])
        assert res.exit_code == 0, res.output
        assert len(server.requests) == 24


def test_blend_local_asks_the_english_question_where_the_local_one_is_blank(tmp_path: Path) -> None:
    """BLEnD's China_data.json item New-en-04 has a blank local question ("  "): read with --map blend-local it
    is asked in English (its en_question), noted in the run report, instead of failing the whole load."""
    folder = tmp_path / "annotations"
    folder.mkdir()
    answers = [{"answers": ["王刚"], "en_answers": ["gang wang", "wang gang"], "count": 3}]
    (folder / "China_data.json").write_text(json.dumps({
        "New-en-04": {"question": "  ", "en_question": "Who is a popular celebrity chef in China?",
                      "annotations": answers, "idks": {"idk": 4}},
        "New-en-05": {"question": "中国有名的厨师是谁？", "en_question": "Who is a famous chef in China?",
                      "annotations": answers, "idks": {"idk": 0}},
        "New-en-06": {"question": "", "en_question": "", "annotations": answers, "idks": {"idk": 0}},
    }, ensure_ascii=False), encoding="utf-8")
    report = LoadReport()
    items = load_ricevl_vqa(folder, field_map=parse_field_map("blend-local"), report=report, check_images=False,
                            on_bad_row="skip")
    by_id = {s.id: s for s in items}
    assert by_id["China_data/New-en-04"].question == "Who is a popular celebrity chef in China?"
    assert by_id["China_data/New-en-05"].question == "中国有名的厨师是谁？"
    assert any("New-en-04" in n and "English question" in n for n in report.notes)
    assert [r["where"] for r in report.skipped] == [f"{folder / 'China_data.json'}, item 'New-en-06'"]
    local = load_ricevl_vqa(RELEASES / "blend" / "data" / "annotations", field_map=parse_field_map("blend-local"),
                            check_images=False)
    assert len(local) == 12 and local[0].question == "在中国，学龄前儿童常见的零食是什么？"
