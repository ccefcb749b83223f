"""Shared fixtures: a loaded default embedder (session) and a factory of scripted OpenAI-compatible servers."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the default cache folder is $XDG_CACHE_HOME/culturekb: never the user's ~/.cache during tests (and each test gets
# its own below, as each test that changed into its tmp_path got a fresh ./.culturekb-cache before)
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="culturekb-tests-xdg-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)

from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from culturekb.testing import ScriptedOpenAIServer  # noqa: E402


def _settings_variables() -> frozenset[str]:
    from culturekb.api.settings import ENV_PREFIX as API_PREFIX
    from culturekb.api.settings import ApiSettings
    from culturekb.config import CONFIG_ENV, ENV_PREFIX, Settings

    names = {f"{ENV_PREFIX}{f.upper()}" for f in Settings.model_fields}
    names |= {f"{API_PREFIX}{f.upper()}" for f in ApiSettings.model_fields}
    return frozenset(names | {CONFIG_ENV})


@pytest.fixture(autouse=True)
def _no_settings_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from each test, never from CULTUREKB_* settings variables of the shell that runs pytest
    (test switches such as CULTUREKB_API_BASE_URL for the `api` marker stay)."""
    for name in _settings_variables() & set(os.environ):
        monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _own_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test's default cache folder ($XDG_CACHE_HOME/culturekb) is its own: no answer cached by another test
    or an earlier run is served to it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(scope="session")
def default_embedder() -> Any:
    """The packaged all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from culturekb.models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.fixture
def openai_server() -> Iterator[Callable[..., ScriptedOpenAIServer]]:
    """Factory: `openai_server(responder=None, latency_s=0.0, embed_dim=32, ...)` -> a started server.

    Every server made here is stopped when the test ends.
    """
    servers: list[ScriptedOpenAIServer] = []

    def make(*args: Any, **kwargs: Any) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer(*args, **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def brighter_use_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The KB of the shipped BRIGHTER sample (six languages), built and indexed from the CLI with the multilingual
    `use` embedder, as a user would: built once per session and only read by the tests that share it."""
    from importlib import resources

    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.kb.cultures import reset_default_registry

    sample = Path(str(resources.files("culturekb.data").joinpath("demo", "brighter")))
    root = tmp_path_factory.mktemp("brighter-use")
    config = root / "culturekb.toml"
    config.write_text('[culturekb]\nembedder = "use"\n', encoding="utf-8")
    kb = root / "kb"
    reset_default_registry()
    runner = CliRunner()
    res = runner.invoke(app, [str(a) for a in (
        "build", sample / "brighter_sample.jsonl", "--scheme", sample / "brighter_scheme.json", "--cultures-file",
        sample / "brighter_cultures.json", "--out", kb, "--cache-dir", root / "cache", "--config", config)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["index", "--kb", str(kb), "--embedder", "use"])
    assert res.exit_code == 0, res.output
    reset_default_registry()
    return kb
