"""Build model clients and embedders from config strings (`"openai:gpt-4o-mini"`, `"minilm"`, `"st:PATH"`).

Backends register by name in small registries (not an if-chain); third-party packages can add theirs through
the entry-point groups `culturekb.model_clients` and `culturekb.embedders` (the entry point loads a factory
with the signature of `ClientFactory` / `EmbedderFactory`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

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

_CLIENT_GROUP = "culturekb.model_clients"
_EMBEDDER_GROUP = "culturekb.embedders"


@dataclass(frozen=True)
class _Entry:
    factory: Callable[..., Any]
    form: str
    """How the spec looks, for error messages: 'openai:MODEL'."""


_CLIENTS: dict[str, _Entry] = {}
_EMBEDDERS: dict[str, _Entry] = {}


def _register(registry: dict[str, _Entry], kind: str, name: str, factory: Callable[..., Any], form: str,
              replace: bool) -> None:
    if not name or ":" in name:
        raise ConfigError(f"{kind} name {name!r} is invalid; use a non-empty name without ':'")
    if name in registry and not replace:
        raise ConfigError(f"{kind} {name!r} is already registered; pass replace=True to override it")
    registry[name] = _Entry(factory, form or name)


def register_client(name: str, factory: ClientFactory, form: str = "", *, replace: bool = False) -> None:
    """Register a chat-model backend under `name` (the part of a spec before ':')."""
    _register(_CLIENTS, "model client", name, factory, form, replace)


def register_embedder(name: str, factory: EmbedderFactory, form: str = "", *, replace: bool = False) -> None:
    """Register an embedder backend under `name` (the part of a spec before ':')."""
    _register(_EMBEDDERS, "embedder", name, factory, form, replace)


def client_forms() -> list[str]:
    """The spec forms `make_client` accepts, e.g. ['openai:MODEL']."""
    return [e.form for e in _CLIENTS.values()]


def embedder_forms() -> list[str]:
    """The spec forms `make_embedder` accepts."""
    return [e.form for e in _EMBEDDERS.values()]


def _lookup(registry: dict[str, _Entry], group: str, kind: str, spec: str) -> tuple[_Entry, str]:
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"{kind} spec is empty; valid forms: {', '.join(e.form for e in registry.values())}")
    name, _, argument = spec.strip().partition(":")
    entry = registry.get(name)
    if entry is None:
        for ep in entry_points(group=group, name=name):
            logger.debug("loading %s plugin %r from %s", kind, name, ep.value)
            factory = ep.load()
            # a plugin module may register itself (with its own form) while it is imported
            entry = registry.setdefault(name, _Entry(factory, f"{name}:..."))
            break
    if entry is None:
        plugins = [f"{ep.name}:..." for ep in entry_points(group=group) if ep.name not in registry]
        forms = [e.form for e in registry.values()] + plugins
        raise ConfigError(f"unknown {kind} spec {spec!r}; valid forms: {', '.join(forms)}")
    return entry, argument


def make_client(spec: str, base_url: str | None = None, **kw: Any) -> ModelClient:
    """A `ModelClient` from a spec such as 'openai:gpt-4o-mini'; `kw` goes to the backend's constructor."""
    entry, argument = _lookup(_CLIENTS, _CLIENT_GROUP, "model client", spec)
    client: ModelClient = entry.factory(argument, base_url=base_url, **kw)
    return client


def make_embedder(spec: str = "minilm", base_url: str | None = None, **kw: Any) -> Embedder:
    """An `Embedder` from a spec: 'minilm', 'st:PATH', 'use' or 'openai-embed:MODEL'."""
    entry, argument = _lookup(_EMBEDDERS, _EMBEDDER_GROUP, "embedder", spec)
    embedder: Embedder = entry.factory(argument, base_url=base_url, **kw)
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


def _minilm(argument: str, base_url: str | None = None, **kw: Any) -> Embedder:
    from culturekb.models.embedders import SentenceTransformerEmbedder

    _no_argument(argument, "minilm", base_url)
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


register_client("openai", _openai_client, "openai:MODEL")
register_embedder("minilm", _minilm, "minilm")
register_embedder("st", _sentence_transformer, "st:PATH")
register_embedder("use", _use, "use")
register_embedder("openai-embed", _openai_embedder, "openai-embed:MODEL")
