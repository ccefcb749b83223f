"""`--scheme` on the KB-backed runs (issue 22): `eval artemculture` and `eval knowledge` read the data's labels
against the scheme given (default: the KB's), which must have the KB's labels (a scheme file may add the data's own
spellings as synonyms); another label set is refused before anything runs. `eval culturaltom` and `eval commet`
have no --scheme and their help says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.data.samples import sample_path
from culturekb.errors import ConfigError
from culturekb.kb.schemes import get_scheme
from culturekb.workflows.data import load_kb_samples, same_labels

runner = CliRunner()


@pytest.fixture(scope="module")
def artemis_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kb") / "artemis-kb"
    res = runner.invoke(app, ["build", str(sample_path("sample:artemis")), "--out", str(out), "--no-calibrate",
                              "--judges", "lexicon,lexicon", "--cache-dir", str(out.parent / "cache")])
    assert res.exit_code == 0, res.output
    return out


def _scheme_with_synonym(tmp_path: Path) -> Path:
    """artemis9 with one more synonym of awe: the KB's labels, the data's own spelling."""
    data = get_scheme("artemis9").to_dict()
    data["name"] = "artemis9-spelled"
    data["synonyms"]["awe"] = [*data["synonyms"].get("awe", []), "wonderstruck"]
    path = tmp_path / "artemis9-spelled.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_scheme_with_the_kb_labels_reads_the_data_own_spellings(artemis_kb: Path, tmp_path: Path) -> None:
    data = tmp_path / "held-out.jsonl"
    data.write_text(json.dumps({"id": "p::en", "culture": "en", "label": "wonderstruck", "split": "test",
                                "text": "a cathedral at dusk"}) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="unknown label 'wonderstruck'"):
        load_kb_samples(artemis_kb, [data])  # the KB's scheme does not know the spelling
    samples = load_kb_samples(artemis_kb, [data], scheme=str(_scheme_with_synonym(tmp_path)))
    assert [s.label for s in samples] == ["awe"]


def test_another_label_set_is_refused_saying_why() -> None:
    with pytest.raises(ConfigError, match=r"--scheme plutchik8: its labels differ .* rebuild the KB with --scheme"):
        same_labels("plutchik8", get_scheme("artemis9"), "kb")
    assert same_labels("artemis9", get_scheme("artemis9"), "kb").labels == get_scheme("artemis9").labels


@pytest.mark.parametrize("name", ["artemculture", "knowledge"])
def test_eval_refuses_a_scheme_the_kb_cannot_score(name: str, artemis_kb: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", name, str(sample_path("sample:artemis")), "--kb", str(artemis_kb),
                              "--out", str(tmp_path / "run"), "--scheme", "plutchik8"])
    assert res.exit_code == 2, res.output
    assert "its labels differ from those of the KB" in " ".join(res.output.split())
    assert not (tmp_path / "run" / "run.json").exists()


@pytest.mark.parametrize(("name", "why"), [("culturaltom", "one of its own options"), ("commet", "free text")])
def test_option_answered_runs_say_why_they_have_no_scheme(name: str, why: str) -> None:
    res = runner.invoke(app, ["eval", name, "--help"], terminal_width=400)
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "There is no --scheme" in text and why in text
    assert "--scheme " not in text.replace("There is no --scheme", "")


@pytest.mark.parametrize("name", ["artemculture", "knowledge"])
def test_rows_skipped_by_on_bad_row_are_listed_in_the_run_report(name: str, artemis_kb: Path, tmp_path: Path
                                                                 ) -> None:
    data = tmp_path / "held-out.jsonl"
    rows = [{"id": f"p{i}::en", "culture": "en", "label": "awe", "split": "test", "text": "a cathedral at dusk"}
            for i in range(3)]
    rows.insert(1, {"id": "bad::en", "culture": "en", "label": "nosuchlabel", "split": "test", "text": "a boat"})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["eval", name, str(data), "--kb", str(artemis_kb), "--out", str(tmp_path / "run")]
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2 and "nosuchlabel" in failed.output, failed.output
    res = runner.invoke(app, [*args, "--on-bad-row", "skip"])
    assert res.exit_code == 0, res.output
    read = json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))["data"]
    assert read["items"] == 3 and len(read["skipped_rows"]) == 1
    assert "line 2" in read["skipped_rows"][0]["where"] and "nosuchlabel" in read["skipped_rows"][0]["problem"]
    assert "rows skipped (--on-bad-row skip)" in res.output
