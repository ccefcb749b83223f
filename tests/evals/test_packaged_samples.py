"""Every benchmark's ``--help`` example runs offline on the packaged sample (``sample:NAME``), as on a fresh clone,
and each packaged sample ships with its notice."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.data.samples import EXAMPLES, PACKAGED_SAMPLES, packaged_sample, resolve_samples, sample_path
from culturekb.errors import DataError

runner = CliRunner()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_help_shows_the_example_and_it_runs(name, tmp_path, monkeypatch, openai_server):
    res = runner.invoke(app, ["eval", name, "--help"], terminal_width=400)
    assert res.exit_code == 0, res.output
    assert " ".join(EXAMPLES[name].split()) in " ".join(res.output.split())
    monkeypatch.chdir(tmp_path)
    example = EXAMPLES[name]
    if "--base-url" in example:  # CoMMET needs a chat model: the scripted server stands in for it
        server = openai_server(responder="I think she feels sad.")
        example = example.replace("http://127.0.0.1:8000/v1", server.base_url)
    for part in example.split("&&"):
        words = shlex.split(part)
        assert words[0] == "culturekb"
        res = runner.invoke(app, words[1:])
        assert res.exit_code == 0, (part, res.output)
    run = json.loads((tmp_path / words[words.index("--out") + 1] / "run.json").read_text())
    assert run["n_samples"] > 0


def test_every_sample_is_a_file_with_a_notice_and_small():
    for name in PACKAGED_SAMPLES:
        path = packaged_sample(name)
        assert path.is_file()
        folder = path.parent
        assert (folder / "NOTICE.md").is_file() or folder.name == "demo", name  # artemis/artelingo: DATA_NOTICE.md
    for kind in ("cedar", "ricevl"):
        root = packaged_sample("cedar").parents[1] / kind
        assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 1_000_000
        notice = (root / "NOTICE.md").read_text(encoding="utf-8")
        assert "licen" in notice.lower()


def test_sample_paths():
    assert sample_path("plain.jsonl") == Path("plain.jsonl")
    assert sample_path("sample:cedar") == packaged_sample("cedar")
    resolved = list(resolve_samples((Path("sample:artemis"), Path("x.csv"))))  # type: ignore[call-overload]
    assert resolved[1] == Path("x.csv")
    with pytest.raises(DataError, match="ricevl-vqa"):
        sample_path("sample:nope")
