"""`culturekb eval` offers one command per registered runner, plug-ins (entry point `culturekb.runners`) included.

The plug-in lives in tests/fixtures/plugin_pkg: a package with a `*.dist-info/entry_points.txt`, found by
`importlib.metadata` once its folder is on `sys.path` (nothing is installed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb import registry
from culturekb.cli import app
from culturekb.evals import Runner, RunnerCommand, register_runner

PLUGIN_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "plugin_pkg"
BUILT_IN = ["artemculture", "cedar", "ricevl-vqa", "ricevl-grounding"]
runner = CliRunner()


def _data(tmp_path: Path) -> Path:
    rows = [{"id": "a", "culture": "en", "label": "awe"}, {"id": "b", "culture": "en", "label": "fear"},
            {"id": "c", "culture": "zh", "label": "awe"}, {"id": "d", "culture": "zh", "label": "awe"}]
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def plugin_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in's folder on sys.path, and the runner registry reading entry points afresh."""
    monkeypatch.syspath_prepend(str(PLUGIN_PATH))
    with registry.RUNNERS.isolated():
        yield
    sys.modules.pop("culturekb_toy_plugin", None)


def test_without_the_plugin_only_the_built_ins_are_offered() -> None:
    res = runner.invoke(app, ["eval", "--help"])
    assert res.exit_code == 0, res.output
    for name in BUILT_IN:
        assert name in res.output
    assert "toy-count" not in res.output


@pytest.mark.usefixtures("plugin_on_path")
def test_a_plugin_runner_appears_in_help_and_runs(tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", "--help"])
    assert res.exit_code == 0, res.output
    assert "toy-count" in res.output and "Toy count: every item gets the same guess" in res.output
    assert all(name in res.output for name in BUILT_IN)
    assert "toy-broken" in res.output and "unavailable" in res.output  # listed, though it cannot be loaded

    res = runner.invoke(app, ["eval", "toy-count", "--help"])
    assert res.exit_code == 0 and "--guess" in res.output and "--out" in res.output

    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "toy-count", str(_data(tmp_path)), "--out", str(out), "--guess", "awe"])
    assert res.exit_code == 0, res.output
    assert "## Toy count" in res.output and "0.75" in res.output and f"reports in {out}" in res.output
    report = json.loads((out / "toy-count.json").read_text(encoding="utf-8"))
    assert report["accuracy"] == 0.75 and report["n"] == 4
    assert (out / "toy-count.md").is_file()

    res = runner.invoke(app, ["eval", "toy-broken", "x"])
    assert res.exit_code == 2 and "culturekb_toy_plugin.missing" in res.output and "cannot be imported" in res.output


def test_the_real_cli_lists_and_runs_a_plugin_without_importing_torch(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN_PATH), os.environ.get("PYTHONPATH", "")])}
    probe = ("import sys\nfrom culturekb.cli import app\n"
             "try:\n    app(['eval', '--help'])\nexcept SystemExit:\n    pass\n"
             "print('torch imported:', 'torch' in sys.modules)\n")
    listed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "toy-count" in listed.stdout and "cedar" in listed.stdout
    assert "torch imported: False" in listed.stdout

    out = tmp_path / "run"
    ran = subprocess.run([sys.executable, "-m", "culturekb.cli", "eval", "toy-count", str(_data(tmp_path)),
                          "--out", str(out), "--guess", "fear"], capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert json.loads((out / "toy-count.json").read_text(encoding="utf-8"))["accuracy"] == 0.25


def test_a_runner_without_a_command_says_how_to_add_one(tmp_path: Path) -> None:
    class Bare(Runner):
        def load(self) -> list:  # type: ignore[type-arg]
            return []

        def score(self, samples, predictions_by_setting):  # type: ignore[no-untyped-def]
            return {}

    with registry.RUNNERS.isolated():
        register_runner("bare", Bare)
        res = runner.invoke(app, ["eval", "bare"])
    assert res.exit_code == 2 and "declares no command line" in res.output and "RunnerCommand" in res.output


def test_a_command_without_out_and_job_is_refused(tmp_path: Path) -> None:
    def options() -> dict[str, object]:
        """Options that forget the run folder."""
        return {}

    class NoOut(Runner):
        command = RunnerCommand(options=options)

        def load(self) -> list:  # type: ignore[type-arg]
            return []

        def score(self, samples, predictions_by_setting):  # type: ignore[no-untyped-def]
            return {}

    with registry.RUNNERS.isolated():
        register_runner("no-out", NoOut)
        res = runner.invoke(app, ["eval", "no-out"])
    assert res.exit_code == 2 and "nor an 'out'" in res.output


def test_unknown_benchmark_is_a_usage_error() -> None:
    res = runner.invoke(app, ["eval", "nope"])
    assert res.exit_code == 2 and "nope" in res.output
