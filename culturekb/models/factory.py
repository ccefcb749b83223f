"""Build model clients and embedders from config strings (`"openai:gpt-4o-mini"`, `"minilm"`, `"st:PATH"`).

Both go through the one registry (`culturekb.registry.CLIENTS` / `EMBEDDERS`): the built-in backends are lazy
``"module:attr"`` entries there (the factories below, and `culturekb.models.hf_client` for ``hf:PATH``);
third-party packages add theirs with `register_client` / `register_embedder` or through the entry-point groups
`culturekb.model_clients` and `culturekb.embedders`. Every factory is called as ``factory(argument, **options)``
(the registry's one signature). A model-client factory returns a provider (an ``async complete``, see
`culturekb.models.model`), which `make_client` wraps in the one `Model`, or a full client (with `acomplete`):
a `Model` already (an `OpenAICompatClient`) is used as it is, any other goes behind the wrapper too
(`models.model.as_model`), keeping its own cache and retries, so that every client's calls are counted. Every
registered client also works as a predictor and as a judge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from culturekb import registry
from culturekb.errors import ConfigError
from culturekb.models.base import Embedder, ModelClient
from culturekb.models.model import Model, accepted_options, as_model, is_provider

__all__ = [
    "ClientFactory",
    "EmbedderFactory",
    "make_client",
    "make_embedder",
    "register_client",
    "register_embedder",
    "client_forms",
    "embedder_forms",
    "WRAPPER_OPTIONS",
    "SERVER_OPTIONS",
]

logger = logging.getLogger(__name__)

ClientFactory = Callable[..., Any]
"""Called as factory(argument, **options); `argument` is what follows the first ':' ('' if none). Returns a provider
(wrapped by `make_client`) or a full `ModelClient`."""
EmbedderFactory = Callable[..., Embedder]
"""Called as factory(argument, **options)."""

WRAPPER_OPTIONS = frozenset({"cache", "cache_scope", "max_concurrency", "max_retries", "backoff_s"})
"""`make_client` options that belong to the wrapper (`Model`); a factory gets them only when it names them (or
takes ``**kw``)."""
SERVER_OPTIONS = frozenset({"base_url", "timeout_s", "http_backend", "api_key_env"})
"""`make_client` options that only a model server uses: dropped, with a log line, for a factory that does not
name them, so one set of options serves every backend spec."""


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


def make_client(spec: str, base_url: str | None = None, **options: Any) -> ModelClient:
    """A `ModelClient` from a spec such as 'openai:gpt-4o-mini'.

    The backend's factory is called as ``factory(argument, **options)`` with the options it takes
    (`WRAPPER_OPTIONS` and `SERVER_OPTIONS` it does not name are left out; `base_url` is one of them); what it
    returns is wrapped in the one `Model` (cache, retries, concurrency, counters: the `WRAPPER_OPTIONS`) when it is
    a provider; a full client that is a `Model` already is used as it is, any other is put behind the wrapper for
    its counters and concurrency bound only (`as_model`: it keeps its own cache and retries).
    """
    factory, argument = registry.CLIENTS.resolve(spec)
    given = {"base_url": base_url, **options}
    names = accepted_options(factory)
    passed = {k: v for k, v in given.items()
              if names is None or k in names or k not in WRAPPER_OPTIONS | SERVER_OPTIONS}
    ignored = sorted(k for k, v in given.items() if k in SERVER_OPTIONS and k not in passed and v is not None)
    if ignored:
        logger.info("%s: the backend takes no server options %s; ignoring them", spec, ignored)
    made = factory(argument, **passed) if names != [] else _no_argument_factory(factory, spec, argument)
    wrapper = {k: v for k, v in options.items() if k in WRAPPER_OPTIONS}
    if is_provider(made):
        return Model(made, id=None if getattr(made, "id", None) else spec, **wrapper)
    return as_model(made, **wrapper)


def _no_argument_factory(factory: Any, spec: str, argument: str) -> Any:
    """A factory (a minimal provider class) that takes nothing: called with nothing; the spec has no argument."""
    if argument:
        raise ConfigError(f"model client {spec!r}: the backend takes no value after ':'")
    return factory()


def make_embedder(spec: str = "minilm", base_url: str | None = None, **kw: Any) -> Embedder:
    """An `Embedder` from a spec: 'minilm' (ONNX Runtime or numpy; 'minilm:st' for sentence-transformers),
    'st:PATH', 'use' or 'openai-embed:MODEL' (or a plug-in's)."""
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


def _openai_client(argument: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                   timeout_s: float | None = None, http_backend: str = "auto", max_concurrency: int = 8) -> Any:
    """The provider of ``openai:MODEL`` (`make_client` wraps it); `max_concurrency` sizes its connection pool."""
    from culturekb.models.chat import OpenAICompatProvider

    return OpenAICompatProvider(_need_argument(argument, "openai:MODEL"), base_url=base_url,
                                api_key_env=api_key_env, timeout_s=timeout_s, http_backend=http_backend,
                                max_concurrency=max_concurrency)


MINILM_RUNTIMES = {"": "auto", "onnx": "onnx", "numpy": "numpy", "st": "sentence-transformers",
                   "sentence-transformers": "sentence-transformers"}
"""The runtimes of the packaged MiniLM: ``minilm`` (default: ONNX Runtime when installed, else numpy; no torch),
``minilm:onnx``, ``minilm:numpy`` and ``minilm:st`` (sentence-transformers). All give the id
``st:all-MiniLM-L6-v2`` and the spec ``minilm``: their vectors are equal within 1e-4 cosine, so any serves an
index built with another."""


def _minilm(argument: str, *, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import MiniLMEmbedder, SentenceTransformerEmbedder

    runtime = MINILM_RUNTIMES.get(argument)
    if runtime is None:
        raise ConfigError(f"unknown MiniLM runtime {argument!r} in spec 'minilm:{argument}'; use 'minilm' "
                          "(the default), 'minilm:onnx', 'minilm:numpy' or 'minilm:st' (sentence-transformers)")
    _no_argument("", "minilm", base_url)
    if runtime in ("auto", "onnx", "numpy"):
        return MiniLMEmbedder(runtime=runtime, **kw)
    return SentenceTransformerEmbedder(**kw)


def _sentence_transformer(argument: str, *, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import SentenceTransformerEmbedder

    _no_argument("", "st", base_url)
    return SentenceTransformerEmbedder(_need_argument(argument, "st:PATH"), **kw)


def _use(argument: str, *, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import USEEmbedder

    _no_argument(argument, "use", base_url)
    return USEEmbedder(**kw)


def _openai_embedder(argument: str, *, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import OpenAIEmbedder

    return OpenAIEmbedder(_need_argument(argument, "openai-embed:MODEL"), base_url=base_url, **kw)
