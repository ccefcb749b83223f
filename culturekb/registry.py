"""One registry: names to objects for every pluggable part (stores, embedders, clients, predictors, judges,
concept extractors, runners).

Each kind of part has one `Registry`. An entry is a callable or a lazy ``"module:attr"`` string, so nothing is
imported until it is used; third-party packages add entries through the entry-point group of the kind
(``culturekb.runners``, ``culturekb.model_clients`` ...), read once, on the first miss or listing. A spec is
``name`` or ``name:argument`` (``openai:gpt-4o-mini``, ``st:/models/e5``, ``faiss:hnsw``); what the argument
means is up to the kind's factory.

One factory signature, for every kind: ``factory(argument, **options)``, `argument` being what follows the first
':' of the spec ('' when there is none) and `options` keywords only (`Registry.create`). What a kind passes as
options: a store gets ``dim=``, a judge ``scheme=``, a predictor ``augmenter=``; a model-client factory returns a
provider (an ``async complete``, which `culturekb.models.make_client` wraps in the one `Model`) or a full client.
A part whose spec takes no value after ':' wraps its class in `without_argument`.

Rules, the same for every kind:

- A name is registered once. Registering it again with another target raises, unless ``replace=True``; the
  same target again (the object, or the ``"module:attr"`` string that names it, as when a module's decorator
  registers a class that is also a lazy built-in entry) is no conflict.
- Built-in and explicitly registered entries win over entry points of the same name.
- An unknown name raises `ConfigError` listing every valid form and the entry-point group that adds one.

Some callers accept the specs of more than one kind: a predictor is a `PREDICTORS` name or any model client,
a judge a `JUDGES` name or any model client. `which` picks the registry that knows a spec, in order.

This module sits on the ground floor: the built-in entries below are strings, so it imports no layer above it.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from culturekb.errors import ConfigError

__all__ = [
    "Registry",
    "without_argument",
    "RegistryEntry",
    "load_target",
    "split_spec",
    "which",
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

_PLUGIN_ORIGIN = "entry point"
_BAD_NAME_CHARS = frozenset(" \t\n/\\:")


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``"openai:gpt-4o"`` into ``("openai", "gpt-4o")``; a plain name gives ``(name, "")``."""
    name, _, argument = spec.strip().partition(":")
    return name.strip(), argument.strip()


def load_target(target: str, what: str) -> Any:
    """Import the object a ``"module:attr"`` string names (`attr` may be dotted); `what` names it in errors."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{what} points at {target!r}, which is not of the form 'package.module:attribute'")
    try:
        obj: Any = importlib.import_module(module.strip())
        for part in attr.strip().split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what} points at {target!r}, which cannot be imported: {exc}") from exc
    return obj


def _names_same_object(ref: str, obj: object) -> bool:
    """Whether the ``"module:attr"`` string `ref` names `obj` (or a re-export of it from a parent package)."""
    module, _, attr = ref.partition(":")
    own_module = getattr(obj, "__module__", None)
    own_name = getattr(obj, "__qualname__", None)
    if not isinstance(own_module, str) or attr != own_name:
        return False
    return own_module == module or own_module.startswith(module + ".")


@dataclass
class RegistryEntry(Generic[T]):
    """One registered name: its target (resolved on first use), the spec form shown in help, and its origin."""

    name: str
    target: Callable[..., T] | str
    form: str
    origin: str = "built-in"

    @property
    def loaded(self) -> bool:
        """Whether the target has been imported (or was registered as an object)."""
        return not isinstance(self.target, str)

    def load(self, kind: str) -> Callable[..., T]:
        """The callable behind this entry, importing a ``"module:attr"`` target the first time."""
        if not isinstance(self.target, str):
            return self.target
        obj = load_target(self.target, f"{kind} {self.name!r} ({self.origin})")
        if not callable(obj):
            raise ConfigError(f"{kind} {self.name!r} ({self.origin}) points at {self.target!r}, which is a "
                              f"{type(obj).__name__}, not a class or function")
        self.target = obj
        return obj


class Registry(Generic[T]):
    """Names to factories for one kind of part, with lazy entries and entry-point plug-ins.

    `kind` names the part in messages ("vector store backend"); `group` is the entry-point group plug-ins use.
    """

    def __init__(self, kind: str, group: str, *, case_sensitive: bool = True, plugin_form: str = "{name}",
                 discover: str | None = None) -> None:
        """An empty registry; `case_sensitive=False` makes ``FAISS`` and ``faiss`` the same name; `plugin_form`
        is how an entry point not loaded yet is shown (``"{name}:..."`` where specs carry an argument);
        `discover` is a ``"module:function"`` called once, before the entry points are read, that registers the
        parts defined in folders (the benchmark folders register their runners where they are defined)."""
        self.kind = kind
        self.group = group
        self._case_sensitive = case_sensitive
        self._plugin_form = plugin_form
        self._entries: dict[str, RegistryEntry[T]] = {}
        self._plugins_loaded = False
        self._discover = discover
        self._discovered = False

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r}, names={list(self._entries)})"

    def _key(self, name: str) -> str:
        key = name.strip()
        return key if self._case_sensitive else key.lower()

    def register(
        self, name: str, target: Callable[..., T] | str, form: str = "", *, replace: bool = False,
        origin: str = "built-in",
    ) -> None:
        """Register `target` (a callable or ``"module:attr"``) under `name`, the part of a spec before ':'.

        `form` is how the spec looks in help and errors (``"openai:MODEL"``; default: the name).
        """
        key = self._key(name)
        if not key or any(ch in _BAD_NAME_CHARS for ch in key):
            raise ConfigError(f"{self.kind} name {name!r} is invalid; use a non-empty name without spaces, "
                              "':', '/' or '\\'")
        if not (callable(target) or (isinstance(target, str) and ":" in target)):
            raise ConfigError(f"{self.kind} {key!r}: register a class, a function or a 'module:attr' string, "
                              f"got {target!r}")
        old = self._entries.get(key)
        if old is not None and not replace and not self._same(old.target, target):
            raise ConfigError(
                f"{self.kind} {key!r} is already registered ({old.origin}: {_describe(old.target)}); "
                "pass replace=True to override it"
            )
        if old is not None and not replace and isinstance(target, str):
            target = old.target  # keep what is loaded already; a string naming it adds nothing
        self._entries[key] = RegistryEntry(key, target, form or (old.form if old is not None else key), origin)

    @staticmethod
    def _same(old: Callable[..., Any] | str, new: Callable[..., Any] | str) -> bool:
        if old is new or old == new:
            return True
        if isinstance(old, str) and not isinstance(new, str):
            return _names_same_object(old, new)
        if isinstance(new, str) and not isinstance(old, str):
            return _names_same_object(new, old)
        return False

    def _load_plugins(self) -> None:
        """Add every entry point of `group` not registered yet (lazily: the target stays a string)."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        if self._discover is not None and not self._discovered:
            self._discovered = True
            load_target(self._discover, f"the discovery of each {self.kind}")()
        for ep in entry_points(group=self.group):
            key = self._key(ep.name)
            if key in self._entries:
                continue
            target = f"{ep.module}:{ep.attr}" if ep.attr else ep.value
            logger.debug("%s %r comes from the entry point %s", self.kind, key, target)
            self._entries[key] = RegistryEntry(key, target, self._plugin_form.format(name=key),
                                               origin=f"{_PLUGIN_ORIGIN} {self.group}")

    def entries(self) -> list[RegistryEntry[T]]:
        """Every entry, built-in and plug-in, in registration order (entry points last)."""
        self._load_plugins()
        return list(self._entries.values())

    def names(self) -> list[str]:
        """Every registered name (built-in and from entry points); imports nothing."""
        return [e.name for e in self.entries()]

    def forms(self) -> list[str]:
        """How each spec looks, for help texts and errors: ``['openai:MODEL', 'hf:PATH']``."""
        return [e.form for e in self.entries()]

    def __contains__(self, spec: object) -> bool:
        if not isinstance(spec, str) or not spec.strip():
            return False
        key = self._key(split_spec(spec)[0])
        if key not in self._entries:
            self._load_plugins()
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def unknown(self, spec: str) -> ConfigError:
        """The error for a spec this registry does not know: it lists every valid form."""
        return _unknown_error(self.kind, spec, [self])

    def entry(self, spec: str) -> tuple[RegistryEntry[T], str]:
        """The entry a spec names and the spec's argument (what follows the first ':')."""
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"{self.kind} spec is empty; choose one of: {', '.join(self.forms())}")
        name, argument = split_spec(spec)
        if spec not in self:
            raise self.unknown(spec)
        return self._entries[self._key(name)], argument

    def get(self, spec: str) -> Callable[..., T]:
        """The factory (class or function) a spec names, imported on first use."""
        found, _ = self.entry(spec)
        return found.load(self.kind)

    def resolve(self, spec: str) -> tuple[Callable[..., T], str]:
        """(factory, argument) for a spec: the caller decides how the argument is passed."""
        found, argument = self.entry(spec)
        return found.load(self.kind), argument

    def create(self, spec: str, **options: Any) -> T:
        """``factory(argument, **options)``: the one factory signature. The argument may also come as the keyword
        of the factory's first parameter (``create("faiss", kind="hnsw")`` is ``create("faiss:hnsw")``); given
        both ways with two values, it is a ConfigError."""
        factory, argument = self.resolve(spec)
        name = _first_parameter(factory) if options else None  # (no signature read for a plain spec)
        if name is not None and name in options:
            given = options.pop(name)
            if argument and given is not None and str(given) != argument:
                raise ConfigError(f"{self.kind} spec {spec!r} already names its {name} ({argument!r}); "
                                  f"{name}={given!r} contradicts it: give one of them")
            argument = argument or given
        return factory(argument, **options)

    @contextmanager
    def isolated(self) -> Iterator[Registry[T]]:
        """Within the block, registrations are undone on exit and entry points are read afresh (for tests)."""
        saved, plugins_loaded, discovered = dict(self._entries), self._plugins_loaded, self._discovered
        self._entries = {k: e for k, e in saved.items() if not e.origin.startswith(_PLUGIN_ORIGIN)}
        self._plugins_loaded = False
        try:
            yield self
        finally:
            # what the block discovered goes with it: a registry not yet discovered before the block discovers
            # on its next listing, as it would have without the block
            self._entries, self._plugins_loaded, self._discovered = saved, plugins_loaded, discovered


def _first_parameter(factory: Callable[..., Any]) -> str | None:
    """The name of the parameter a factory takes the spec's argument in (its first positional one), if known."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return None
    first = next((p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None)
    return first.name if first is not None and first.kind is first.POSITIONAL_OR_KEYWORD else None


def _describe(target: Callable[..., Any] | str) -> str:
    if isinstance(target, str):
        return target
    return f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', repr(target))}"


def _unknown_error(kind: str, spec: str, registries: list[Registry[Any]]) -> ConfigError:
    forms = [f for r in registries for f in r.forms()]
    groups = " or ".join(repr(r.group) for r in registries)
    return ConfigError(
        f"unknown {kind} {spec!r}; choose one of: {', '.join(forms) or '(none registered)'}. "
        f"A plug-in adds one through the entry-point group {groups}"
    )


def without_argument(target: Callable[..., T], kind: str, name: str) -> Callable[..., T]:
    """`target(**options)` in the one factory signature, for a part whose spec takes no value after ':' (a judge,
    a concept extractor): a value after ':', or an option `target` does not take, is a `ConfigError` naming the
    spec, raised before `target` runs."""

    def factory(argument: str = "", **options: Any) -> T:
        if argument:
            raise ConfigError(f"{kind} '{name}:{argument}': {name!r} takes no value after ':'; use {name!r} and "
                              "pass options as keywords")
        try:
            inspect.signature(target).bind(**options)
        except TypeError as exc:
            raise ConfigError(f"{kind} {name!r}: bad arguments {sorted(options)} ({exc})") from exc
        return target(**options)

    factory.__name__ = factory.__qualname__ = f"{name}_factory"
    factory.__doc__ = f"The {kind} {name!r}: ``factory('', **options)`` makes ``{_describe(target)}(**options)``."
    return factory


def which(spec: str, *registries: Registry[Any], kind: str) -> Registry[Any]:
    """The first of `registries` that knows `spec`; otherwise a `ConfigError` naming `kind` with every form."""
    if not isinstance(spec, str) or not spec.strip():
        forms = [f for r in registries for f in r.forms()]
        raise ConfigError(f"{kind} spec is empty; choose one of: {', '.join(forms)}")
    for registry in registries:
        if spec in registry:
            return registry
    raise _unknown_error(kind, spec, list(registries))


# -- the registries and their built-in entries --------------------------------------------------------------
# Targets are strings so this module imports nothing above the ground floor, and nothing is imported before use.

STORES: Registry[Any] = Registry("vector store backend", "culturekb.stores", case_sensitive=False)
"""Called as ``factory(argument, dim=..., **options)``: the argument is FAISS's index kind (``faiss:hnsw``) or
where a Qdrant collection lives (``qdrant:http://host:6333``, ``qdrant:/data/q``). The class also needs a
``load(directory, meta=..., mmap=..., verify=...)`` classmethod."""
STORES.register("numpy", "culturekb.retrieval.stores.numpy_store:NumpyStore")
STORES.register("faiss", "culturekb.retrieval.stores.faiss_store:FaissStore", "faiss[:flat|hnsw|ivf]")
STORES.register("qdrant", "culturekb.retrieval.stores.qdrant_store:QdrantStore")

EMBEDDERS: Registry[Any] = Registry("embedder", "culturekb.embedders", plugin_form="{name}:...")
"""Called as ``factory(argument, **options)`` (options: base_url ...)."""
EMBEDDERS.register("minilm", "culturekb.models.factory:_minilm")
EMBEDDERS.register("st", "culturekb.models.factory:_sentence_transformer", "st:PATH")
EMBEDDERS.register("use", "culturekb.models.factory:_use")
EMBEDDERS.register("openai-embed", "culturekb.models.factory:_openai_embedder", "openai-embed:MODEL")

CLIENTS: Registry[Any] = Registry("model client", "culturekb.model_clients", plugin_form="{name}:...")
"""Called as ``factory(argument, **options)`` (options it names: base_url, timeout_s ...; `make_client` leaves out the
server options a factory does not name); returns a provider to wrap or a full client. Every client can serve as
predictor and judge."""
CLIENTS.register("openai", "culturekb.models.factory:_openai_client", "openai:MODEL")
CLIENTS.register("hf", "culturekb.models.hf_client:hf_client_factory", "hf:PATH")

PREDICTORS: Registry[Any] = Registry("predictor", "culturekb.predictors")
"""Predictors that are not a model client, called as ``factory(argument, augmenter=..., **options)``; any
`CLIENTS` spec makes a model predictor."""
PREDICTORS.register("kb-prior", "culturekb.inference.predictors:kb_prior_predictor")

JUDGES: Registry[Any] = Registry("judge", "culturekb.judges")
"""Offline judges, called as ``factory(argument, scheme=..., **options)``; any `CLIENTS` spec makes an LLM judge."""
JUDGES.register("lexicon", "culturekb.builders.judges:lexicon_factory")
JUDGES.register("prototype", "culturekb.builders.judges:prototype_factory")

CONCEPT_EXTRACTORS: Registry[Any] = Registry("concept extractor", "culturekb.concept_extractors")
"""Called as ``factory(argument, **options)``; the built-in extractors take no argument."""
CONCEPT_EXTRACTORS.register("precomputed", "culturekb.text.concepts:precomputed_factory")
CONCEPT_EXTRACTORS.register("text", "culturekb.text.concepts:text_factory")
CONCEPT_EXTRACTORS.register("vlm", "culturekb.builders.concepts:vlm_factory")
CONCEPT_EXTRACTORS.register("clip", "culturekb.builders.concepts:clip_factory")

RUNNERS: Registry[Any] = Registry("benchmark runner", "culturekb.runners", case_sensitive=False,
                                  discover="culturekb._discovery:discover_benchmarks")
"""Benchmark runners (`culturekb.evals.Runner` subclasses); ``culturekb eval NAME`` offers one command each. No
built-in entries here: each benchmark folder (``culturekb/evals/<name>/``, or a folder on ``CULTUREKB_BENCHMARKS``)
registers its runner where the class is defined (``@register_runner``), found on the first listing."""
