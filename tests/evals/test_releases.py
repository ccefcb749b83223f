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


BANGLAVERSE = RELEASES / "banglaverse" / "data"


def test_banglaverse_question_files_load_for_ricevl_vqa_with_its_map_name() -> None:
    """BanglaVerse names neither country nor category inside its records and its images by id alone: --map
    banglaverse takes the category from the file's name, Bangladesh as the country, each question as an open one
    (its options kept in metadata), and images/<image_id> under the category folder."""
    fm = parse_field_map("banglaverse")
    report = LoadReport()
    culture = load_ricevl_vqa(BANGLAVERSE / "culture" / "annotations", field_map=fm, report=report,
                              check_images=False)
    assert len(culture) == 14 and report.field_map == "banglaverse"  # 6 commonsense + 8 visual questions
    assert report.defaults["country"] == 14 and report.defaults["format"] == 14
    by_id = {s.id: s for s in culture}
    first = by_id["culture_qa_pairs:1"]
    assert first.culture == "Bangladesh" and first.metadata["category"] == "culture"
    assert first.metadata["format"] == "qa" and first.label == "সাঁওতাল"
    assert first.metadata["options"] == ["সাঁওতাল", "গারো", "চাকমা", "মারমা"]
    assert first.metadata["image_id"] == "culture_001"
    assert first.image is not None and Path(first.image).parts[-2:] == ("images", "culture_001")
    assert by_id["culture_commonsense_reasoning:1"].label == "বাহা পরব"
    media = load_ricevl_vqa(BANGLAVERSE / "media_and_movies" / "annotations" / "media_and_movies_qa_pairs.json",
                            field_map=fm, check_images=False)
    assert len(media) == 6 and {s.metadata["category"] for s in media} == {"media and movies"}
    history = load_ricevl_vqa(BANGLAVERSE / "history" / "annotations" / "history_qa_pairs.json", field_map=fm,
                              check_images=False)
    assert [s.id for s in history] == [f"history_qa_pairs:{i}" for i in range(1, 5)]  # two questions on one image
    assert [s.metadata["image_id"] for s in history].count("history_096") == 2


def test_banglaverse_read_unasked_fails_on_every_row_and_names_its_map() -> None:
    """The records have no key to recognise the release by; a load without the map reports all its rows at once
    and, from the file's name, says which map to try."""
    with pytest.raises(DataError) as err:
        load_ricevl_vqa(BANGLAVERSE / "culture" / "annotations" / "culture_qa_pairs.json", check_images=False)
    text = str(err.value)
    assert "8 bad row(s)" in text and "--map banglaverse" in text


def _banglaverse_images(root: Path, names: list[str]) -> None:
    from PIL import Image

    (root / "images").mkdir(parents=True)
    for name in names:  # made here, not copied: the release does not say who owns its photographs
        fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".JPG": "JPEG"}[Path(name).suffix]
        Image.new("RGB", (24, 16), (200, 40, 40)).save(root / "images" / name, format=fmt)


def test_banglaverse_images_named_by_id_are_found_and_sent(tmp_path: Path) -> None:
    """An image named by its id (``culture_005``) is the file of that name with an image extension, whichever
    (.jpg, .png, .jpeg): with --data-root at the category folder every question is sent with its image; without
    it the run is refused before any request, naming --data-root."""
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.testing import ScriptedOpenAIServer

    names = [f"culture_00{i}.jpg" for i in (1, 2, 3, 4, 6, 7)] + ["culture_005.png", "culture_008.jpeg"]
    _banglaverse_images(tmp_path / "culture", names)
    data = str(BANGLAVERSE / "culture" / "annotations" / "culture_qa_pairs.json")
    items = load_ricevl_vqa(data, field_map=parse_field_map("banglaverse"), data_root=tmp_path / "culture")
    assert sorted(Path(s.image or "").name for s in items) == sorted(names)
    common = ["eval", "ricevl-vqa", data, "--map", "banglaverse", "--model", "openai:m", "--settings", "global"]
    with ScriptedOpenAIServer(lambda body: "সাঁওতাল") as server:
        res = CliRunner().invoke(app, [*common, "--base-url", server.base_url, "--out", str(tmp_path / "bare")])
        assert res.exit_code == 2 and "--data-root" in res.output and server.chat_calls == 0
        res = CliRunner().invoke(app, [*common, "--base-url", server.base_url, "--data-root",
                                       str(tmp_path / "culture"), "--out", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
        assert server.chat_calls == 8
        for request in server.requests:
            parts = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"]]
            assert any(p.get("type") == "image_url" for p in parts)


def test_an_image_id_that_fits_two_files_or_a_bad_template_is_refused(tmp_path: Path) -> None:
    from culturekb._io import resolve_image_ref

    _banglaverse_images(tmp_path, ["x_001.jpg", "x_001.png", "x_002.JPG"])
    assert resolve_image_ref("images/x_002", "row 1", data_root=tmp_path).endswith("x_002.JPG")
    assert resolve_image_ref("images/x_003", "row 1", data_root=tmp_path).endswith("x_003")  # nothing fits: as is
    with pytest.raises(DataError, match="x_001.jpg, x_001.png"):
        resolve_image_ref("images/x_001", "row 1", data_root=tmp_path)
    for bad in ("image=images/{image_id.real}", "image=images/{image_id", "image=x/{image_id!r}"):
        with pytest.raises(ConfigError, match="template"):
            parse_field_map(bad)
    data = tmp_path / "q.json"
    data.write_text(json.dumps([{"q": "a", "image_id": "x_002"}, {"q": "b"}]), encoding="utf-8")
    recs = list(read_records(data, parse_field_map("question=q,image=images/{image_id}")))
    assert recs[0].data["image"] == "images/x_002" and "image" not in recs[1].data  # no key: the field is unset
