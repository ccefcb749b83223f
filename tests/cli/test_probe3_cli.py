"""Cases of the third probe (issue 24, items 6 and 7) that need more than one command or a generated input: text
fields over the size limit in every format and loader, a KB of no tuple, an edited KB with a duplicate line, an
edited ledger with an unknown label; and CLI output in words (issue 26)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb._io import MAX_TEXT_FIELD
from culturekb.cli import app
from culturekb.errors import DataError

runner = CliRunner()
BIG = "x" * (MAX_TEXT_FIELD + 1)
ROWS: dict[str, dict[str, Any]] = {
    "samples_jsonl": {"id": "x::en", "culture": "en", "label": "awe", "split": "train", "explanations": [BIG]},
    "cedar": {"id": "c1", "language": "en", "modality": "text", "narrative": BIG, "question": "Which emotion?",
              "label": "fear"},
    "ricevl_vqa": {"id": "q1", "country": "SG", "category": "food", "format": "qa", "question": "What?",
                   "answer": "crab", "extra": {"notes": BIG}},
    "culturaltom": {"id": "q1", "question": BIG, "options": ["a", "b"], "answer": "a", "task": "false_belief",
                    "level": 2, "image_source": "none", "region": "East Asia"},
    "commet": {"id": "s1", "culture": "zh", "modality": "text-complete", "category": "belief",
               "turns": [{"question": "Where?", "text": BIG, "answer": "box"}]},
}


def _loaders() -> dict[str, Callable[[Path], Any]]:
    from culturekb.evals.cedar.data import load_cedar
    from culturekb.evals.commet import load_story_turns
    from culturekb.evals.culturaltom import load_culturaltom
    from culturekb.evals.ricevl.data import load_ricevl_vqa
    from culturekb.kb.loaders import load_samples_jsonl

    return {"samples_jsonl": load_samples_jsonl, "cedar": load_cedar, "ricevl_vqa": load_ricevl_vqa,
            "culturaltom": load_culturaltom, "commet": load_story_turns}


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("loader", sorted(ROWS))
def test_a_text_field_over_the_limit_is_refused_in_every_format(loader: str, suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"big{suffix}"
    row = json.dumps(ROWS[loader])
    path.write_text(row + "\n" if suffix == ".jsonl" else "[" + row + "]", encoding="utf-8")
    with pytest.raises(DataError, match=f"above the limit of {MAX_TEXT_FIELD:,}") as info:
        _loaders()[loader](path)
    text = str(info.value)
    assert str(path) in text and ("line 1" in text or "item 1" in text) and "field '" in text
    # just under the limit is read
    small = json.loads(row.replace(BIG, "x" * MAX_TEXT_FIELD))
    path.write_text(json.dumps(small) + "\n" if suffix == ".jsonl" else json.dumps([small]), encoding="utf-8")
    try:
        _loaders()[loader](path)
    except DataError as exc:
        assert "above the limit" not in str(exc)


def test_build_refuses_a_big_jsonl_field_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(ROWS["samples_jsonl"]) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["build", str(path), "--out", str(tmp_path / "kb"), "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 2, res.output
    assert "field 'explanations[0]'" in " ".join(res.output.split())
    assert not (tmp_path / "kb").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize("args", [["--min-support", "1000000"], []], ids=["min-support", "one-row"])
def test_a_build_of_no_tuple_exits_2_with_the_reason_and_writes_no_kb(args: list[str], tmp_path: Path) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "a::en", "culture": "en", "label": "awe", "concepts": ["sea"],
                                "split": "train"}) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["build", str(data), "--out", str(tmp_path / "kb"), "--concepts", "precomputed",
                              "--judges", "lexicon,lexicon", "--cache-dir", str(tmp_path / "c"), *args])
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "no knowledge tuple" in text and "min_support" in text
    assert not (tmp_path / "kb").exists()


def _small_kb(path: Path, status: str = "accepted") -> Path:
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.store import KnowledgeBase

    tuples = [KnowledgeTuple(concept=c, culture="en", label="awe", distribution={"awe": 0.75, "fear": 0.25},
                             support=4, rationales=[f"the {c} is vast"], status=status) for c in ("sea", "sky")]
    KnowledgeBase(tuples, get_scheme("artemis9")).save(path)
    return path


def test_a_duplicate_tuple_line_is_named_with_file_lines_and_fix(tmp_path: Path) -> None:
    kb = _small_kb(tmp_path / "kb")
    lines = (kb / "tuples.jsonl").read_text("utf-8").splitlines()
    (kb / "tuples.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["kb", "info", str(kb)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert f"{kb / 'tuples.jsonl'}, line {len(lines) + 1}: a second tuple" in text
    assert "the first is on line 1" in text and "delete one of the two lines" in text


def test_a_ledger_decision_with_an_unknown_label_is_named_and_output_is_in_words(tmp_path: Path) -> None:
    kb = _small_kb(tmp_path / "kb", status="pending")
    queue = tmp_path / "queue.jsonl"
    assert runner.invoke(app, ["review", "export", str(kb), "--out", str(queue)]).exit_code == 0
    rows = [json.loads(line) for line in queue.read_text("utf-8").splitlines()]
    rows[0].update(decision="relabel", corrected_label="fear", reviewer="ana")
    queue.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = runner.invoke(app, ["review", "import", str(kb), str(queue)])
    assert res.exit_code == 0, res.output
    assert "relabelled 1" in res.output and "already in ledger 0" in res.output and "{'" not in res.output
    ledger = tmp_path / "kb.review.jsonl"
    ledger.write_text(ledger.read_text("utf-8").replace('"label":"fear"', '"label":"nosuch"'), encoding="utf-8")
    assert '"nosuch"' in ledger.read_text("utf-8")
    res = runner.invoke(app, ["review", "apply", str(kb)])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "{'" not in res.output and "to re-check 1" in text
    assert f"not applied: {ledger}: relabel to 'nosuch' of tuple 'en::" in text
    assert "is not in the KB's scheme" in text and "decide on it again" in text


def test_build_report_prints_words_not_dicts(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"i{i}::en", "culture": "en", "label": "awe", "concepts": ["sea"],
                                        "split": "train"}) + "\n" for i in range(3)), encoding="utf-8")
    res = runner.invoke(app, ["build", str(data), "--out", str(tmp_path / "kb"), "--concepts", "precomputed",
                              "--judges", "lexicon,lexicon", "--min-support", "1", "--no-calibrate",
                              "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "{'" not in res.output and "['" not in res.output, res.output
