"""Build model clients and embedders from config strings (`"openai:gpt-4o-mini"`, `"minilm"`, `"st:PATH"`).

Both go through the one registry (`culturekb.registry.CLIENTS` / `EMBEDDERS`): the built-in backends are lazy
``"module:attr"`` entries there (the factories below, and `culturekb.inference.hf_client` for ``hf:PATH``);
third-party packages add theirs with `register_client` / `register_embedder` or through the entry-point groups
`culturekb.model_clients` and `culturekb.embedders` (the entry point names a factory with the signature of
`ClientFactory` / `EmbedderFactory`). Every registered client also works as a predictor and as a judge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from culturekb import registry
from culturekb.errors import ConfigError
from culturekb.models.base import Embedder, ModelClient

__all__ = [
    "ClientFactory",
    "EmbedderFactory",
    "make_client",
    "make_embedder",
    "register_client",
    "register_embedder",
    "client_forms",
    "embedder_forms",
]

logger = logging.getLogger(__name__)

ClientFactory = Callable[..., ModelClient]
"""Called as factory(argument, base_url=..., **kw); `argument` is what follows the first ':' ('' if none)."""
EmbedderFactory = Callable[..., Embedder]
"""Called as factory(argument, base_url=..., **kw)."""


def register_client(name: str, factory: ClientFactory | str, form: str = "", *, replace: bool = False) -> None:
    """Register a chat-model backend under `name` (the part of a spec before ':'); `factory` may be a lazy
    ``"module:attr"`` string. `form` is how its spec looks in help and errors (``"myserver:MODEL"``)."""
    registry.CLIENTS.register(name, factory, form, replace=replace)


def register_embedder(name: str, factory: EmbedderFactory | str, form: str = "", *, replace: bool = False) -> None:
    """Register an embedder backend under `name` (the part of a spec before ':'); see `register_client`."""
    registry.EMBEDDERS.register(name, factory, form, replace=replace)


def client_forms() -> list[str]:
    """The spec forms `make_client` accepts, e.g. ['openai:MODEL', 'hf:PATH'] (plug-ins included)."""
    return registry.CLIENTS.forms()


def embedder_forms() -> list[str]:
    """The spec forms `make_embedder` accepts (plug-ins included)."""
    return registry.EMBEDDERS.forms()


def make_client(spec: str, base_url: str | None = None, **kw: Any) -> ModelClient:
    """A `ModelClient` from a spec such as 'openai:gpt-4o-mini'; `kw` goes to the backend's constructor."""
    client: ModelClient = registry.CLIENTS.create(spec, base_url=base_url, **kw)
    return client


def make_embedder(spec: str = "minilm", base_url: str | None = None, **kw: Any) -> Embedder:
    """An `Embedder` from a spec: 'minilm' (numpy runtime; 'minilm:st' for sentence-transformers), 'st:PATH', 'use'
    or 'openai-embed:MODEL' (or a plug-in's)."""
    embedder: Embedder = registry.EMBEDDERS.create(spec, base_url=base_url, **kw)
    return embedder


# -- built-in backends ----------------------------------------------------------------------------------------


def _need_argument(argument: str, form: str) -> str:
    if not argument:
        raise ConfigError(f"spec needs a value after ':'; expected the form {form!r}")
    return argument


def _no_argument(argument: str, name: str, base_url: str | None) -> None:
    if argument:
        raise ConfigError(f"spec {name!r} takes no value after ':', got {argument!r}")
    if base_url is not None:
        raise ConfigError(f"embedder {name!r} runs locally and takes no base_url")


def _openai_client(argument: str, base_url: str | None = None, **kw: Any) -> ModelClient:
    from culturekb.models.chat import OpenAICompatClient

    return OpenAICompatClient(_need_argument(argument, "openai:MODEL"), base_url=base_url, **kw)


MINILM_RUNTIMES = {"": "numpy", "numpy": "numpy", "st": "sentence-transformers",
                   "sentence-transformers": "sentence-transformers"}
"""The runtimes of the packaged MiniLM: ``minilm`` / ``minilm:numpy`` (default, no torch) and ``minilm:st``
(sentence-transformers). Both give the id ``st:all-MiniLM-L6-v2`` and the spec ``minilm``: their vectors are equal
within 1e-4 cosine, so either serves an index built with the other."""


def _minilm(argument: str, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import MiniLMEmbedder, SentenceTransformerEmbedder

    runtime = MINILM_RUNTIMES.get(argument)
    if runtime is None:
        raise ConfigError(f"unknown MiniLM runtime {argument!r} in spec 'minilm:{argument}'; use 'minilm' "
                          "(numpy runtime, the default), 'minilm:numpy' or 'minilm:st' (sentence-transformers)")
    _no_argument("", "minilm", base_url)
    if runtime == "numpy":
        return MiniLMEmbedder(**kw)
    return SentenceTransformerEmbedder(**kw)


def _sentence_transformer(argument: str, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import SentenceTransformerEmbedder

    _no_argument("", "st", base_url)
    return SentenceTransformerEmbedder(_need_argument(argument, "st:PATH"), **kw)


def _use(argument: str, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import USEEmbedder

    _no_argument(argument, "use", base_url)
    return USEEmbedder(**kw)


def _openai_embedder(argument: str, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import OpenAIEmbedder

    return OpenAIEmbedder(_need_argument(argument, "openai-embed:MODEL"), base_url=base_url, **kw)
