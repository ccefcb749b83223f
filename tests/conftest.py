"""Shared fixtures: a loaded default embedder (session) and a factory of scripted OpenAI-compatible servers."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from culturekb.testing import ScriptedOpenAIServer  # noqa: E402


@pytest.fixture(autouse=True)
def _no_settings_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from each test, never from CULTUREKB_* variables of the shell that runs pytest."""
    for name in [n for n in os.environ if n.startswith("CULTUREKB_")]:
        monkeypatch.delenv(name)


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
