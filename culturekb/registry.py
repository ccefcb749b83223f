"""One registry: names to objects for every pluggable part (stores, embedders, clients, predictors, judges,
concept extractors, runners).

Each kind of part has one `Registry`. An entry is a callable or a lazy ``"module:attr"`` string, so nothing is
imported until it is used; third-party packages add entries through the entry-point group of the kind
(``culturekb.runners``, ``culturekb.model_clients`` ...), which is read on the first miss. A spec is
``name`` or ``name:argument`` (``openai:gpt-4o-mini``, ``st:/models/e5``, ``faiss:hnsw``); what the argument
means is up to the kind's factory.

This module sits on the ground floor: the built-in entries below are strings, so it imports no layer above it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from culturekb.errors import ConfigError

__all__ = [
    "Registry",
    "RegistryEntry",
    "split_spec",
    "STORES",
    "EMBEDDERS",
    "CLIENTS",
    "PREDICTORS",
    "JUDGES",
    "CONCEPT_EXTRACTORS",
    "RUNNERS",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``"openai:gpt-4o"`` into ``("openai", "gpt-4o")``; a plain name gives ``(name, "")``."""
    name, _, argument = spec.strip().partition(":")
    return name.strip(), argument.strip()


@dataclass
class RegistryEntry(Generic[T]):
    """One registered name: its target (resolved on first use), the spec form shown in help, and its origin."""

    name: str
    target: Callable[..., T] | str
    form: str
    origin: str = "built-in"

    def load(self, kind: str) -> Callable[..., T]:
        """The callable behind this entry, importing a ``"module:attr"`` target the first time."""
        if isinstance(self.target, str):
            module, _, attr = self.target.partition(":")
            try:
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(
                    f"{kind} {self.name!r} ({self.origin}) points at {self.target!r}, which cannot be loaded: {exc}"
                ) from exc
            self.target = obj
        return self.target


class Registry(Generic[T]):
    """Names to factories for one kind of part, with lazy entries and entry-point plug-ins.

    `kind` names the part in messages ("vector store"); `group` is the entry-point group plug-ins use.
    """

    def __init__(self, kind: str, group: str, *, case_sensitive: bool = True) -> None:
        self.kind = kind
        self.group = group
        self._case_sensitive = case_sensitive
        self._entries: dict[str, RegistryEntry[T]] = {}
        self._plugins_loaded = False

    def _key(self, name: str) -> str:
        key = name.strip()
        return key if self._case_sensitive else key.lower()

    def register(
        self, name: str, target: Callable[..., T] | str, form: str = "", *, replace: bool = False,
        origin: str = "built-in",
    ) -> None:
        """Register `target` (a callable or ``"module:attr"``) under `name`, the part of a spec before ':'."""
        key = self._key(name)
        if not key or ":" in key:
            raise ConfigError(f"{self.kind} name {name!r} is invalid; use a non-empty name without ':'")
        if key in self._entries and not replace and self._entries[key].target is not target:
            raise ConfigError(f"{self.kind} {key!r} is already registered; pass replace=True to override it")
        self._entries[key] = RegistryEntry(key, target, form or key, origin)

    def _load_plugins(self) -> None:
        """Add every entry point of `group` not registered yet (lazily: the target stays a string)."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.group):
            key = self._key(ep.name)
            if key not in self._entries:
                self._entries[key] = RegistryEntry(key, ep.value, f"{key}:..." if ":" in ep.value else key,
                                                   origin=f"entry point {self.group}")

    def entries(self) -> list[RegistryEntry[T]]:
        """Every entry, built-in and plug-in, in registration order."""
        self._load_plugins()
        return list(self._entries.values())

    def names(self) -> list[str]:
        """Every registered name (built-in and from entry points)."""
        return [e.name for e in self.entries()]

    def forms(self) -> list[str]:
        """How each spec looks, for help texts and errors: ``['openai:MODEL', 'hf:PATH']``."""
        return [e.form for e in self.entries()]

    def __contains__(self, spec: object) -> bool:
        return isinstance(spec, str) and self._key(split_spec(spec)[0]) in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _unknown(self, spec: str) -> ConfigError:
        return ConfigError(
            f"unknown {self.kind} {spec!r}; valid forms: {', '.join(self.forms()) or '(none registered)'}. "
            f"A plug-in adds one through the entry-point group {self.group!r}"
        )

    def entry(self, spec: str) -> tuple[RegistryEntry[T], str]:
        """The entry a spec names and the spec's argument (what follows the first ':')."""
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"{self.kind} spec is empty; valid forms: {', '.join(self.forms())}")
        name, argument = split_spec(spec)
        key = self._key(name)
        found = self._entries.get(key)
        if found is None:
            self._load_plugins()
            found = self._entries.get(key)
        if found is None:
            raise self._unknown(spec)
        return found, argument

    def get(self, spec: str) -> Callable[..., T]:
        """The factory (class or function) a spec names, imported on first use."""
        found, _ = self.entry(spec)
        return found.load(self.kind)

    def resolve(self, spec: str) -> tuple[Callable[..., T], str]:
        """(factory, argument) for a spec: the caller decides how the argument is passed."""
        found, argument = self.entry(spec)
        return found.load(self.kind), argument

    def create(self, spec: str, *args: Any, **kw: Any) -> T:
        """``factory(argument, *args, **kw)``: the convention of the kinds whose spec carries an argument."""
        factory, argument = self.resolve(spec)
        return factory(argument, *args, **kw)


# -- the registries and their built-in entries --------------------------------------------------------------
# Targets are strings so this module imports nothing above the ground floor.

STORES: Registry[Any] = Registry("vector store backend", "culturekb.stores", case_sensitive=False)
"""Called as ``factory(dim, **options)``; the spec argument is the index kind (``faiss:hnsw``)."""
STORES.register("numpy", "culturekb.retrieval.stores.numpy_store:NumpyStore")
STORES.register("faiss", "culturekb.retrieval.stores.faiss_store:FaissStore")
STORES.register("qdrant", "culturekb.retrieval.stores.qdrant_store:QdrantStore")

EMBEDDERS: Registry[Any] = Registry("embedder", "culturekb.embedders")
"""Called as ``factory(argument, base_url=..., **kw)``."""

CLIENTS: Registry[Any] = Registry("model client", "culturekb.model_clients")
"""Called as ``factory(argument, base_url=..., **kw)``; every client can serve as predictor and judge."""

PREDICTORS: Registry[Any] = Registry("predictor", "culturekb.predictors")
"""Predictors that are not a model client (``kb-prior``); a client spec makes a model predictor."""

JUDGES: Registry[Any] = Registry("judge", "culturekb.judges")
"""Offline judges (``lexicon``, ``prototype``); a client spec makes an LLM judge."""

CONCEPT_EXTRACTORS: Registry[Any] = Registry("concept extractor", "culturekb.concept_extractors")
"""Called as ``factory(**kw)``."""

RUNNERS: Registry[Any] = Registry("benchmark runner", "culturekb.runners")
"""Benchmark runners for ``culturekb eval NAME``."""
