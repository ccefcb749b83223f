"""The `VectorStore` contract, shared input checks, and the backend registry (`make_store`, `load_store`).

Every store holds unit vectors (inner product = cosine similarity), a string id per vector, and a payload
per vector that carries at least the vector's `culture`. `search` filters by culture: one culture id, a
list of ids (any of them), or None (all). Results are, per query row, up to `k` `(id, score)` pairs, best
first; fewer when the filter matches fewer vectors, none when it matches nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from culturekb import registry
from culturekb.errors import ConfigError, DataError, IndexError_, ProviderError

__all__ = [
    "CultureFilter",
    "SearchResult",
    "VectorStore",
    "StoreUnavailableError",
    "STORE_META",
    "STORE_FORMAT",
    "make_store",
    "load_store",
    "register_store",
    "list_stores",
    "store_name",
    "check_add_inputs",
    "check_queries",
    "culture_list",
]

CultureFilter = str | Sequence[str] | None
"""One culture id, several (any of them), or None for no filter."""

SearchResult = list[list[tuple[str, float]]]
"""Per query row, up to k (id, score) pairs, best first."""

STORE_META = "store.json"


class StoreUnavailableError(ProviderError, IndexError_):
    """A store server (Qdrant `url=`) cannot be reached: both a provider failure and an unusable index."""


STORE_FORMAT = 1


@runtime_checkable
class VectorStore(Protocol):
    """A vector store with a culture filter. Backends: numpy (exact reference), faiss, qdrant."""

    backend: str
    dim: int

    def __len__(self) -> int:
        """Number of stored vectors."""
        ...

    def add(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        """Add unit vectors (n, dim) with unique string ids; each payload must name its 'culture'."""
        ...

    def search(self, query_vectors: np.ndarray, k: int = 1, culture: CultureFilter = None) -> SearchResult:
        """Top-k (id, cosine) per query row among the vectors of the given culture(s), one batched call."""
        ...

    def cultures(self) -> list[str]:
        """The cultures that have at least one vector."""
        ...

    def save(self, directory: str | Path) -> Path:
        """Persist the store into `directory` (writes `store.json` plus backend files)."""
        ...

    def close(self) -> None:
        """Release files and connections (a no-op for in-memory backends)."""
        ...


# -- registry: culturekb.registry.STORES ----------------------------------------------------------------------
def register_store(name: str, factory: str | Callable[..., VectorStore], *, replace: bool = False) -> None:
    """Register a backend by name: a class, or a lazy "module:attr" string naming one. It is called as
    ``factory(argument, dim=..., **options)`` (the one factory signature; `argument` is what follows ':' in the
    spec, '' when nothing does) and needs a ``load(directory, meta=..., mmap=..., verify=...)`` classmethod.

    Registering a taken name with another target raises unless `replace`; plug-in packages may instead declare
    an entry point in the group ``culturekb.stores``.
    """
    registry.STORES.register(name, factory, replace=replace)


def list_stores() -> list[str]:
    """Names of the registered backends (built-in and plug-in), sorted."""
    return sorted(registry.STORES.names())


def _resolve(name: str) -> Any:
    return registry.STORES.get(name)


def store_name(spec: str) -> str:
    """The backend a store spec names: "faiss:hnsw" -> "faiss" (what follows ':' goes to its factory)."""
    return registry.split_spec(spec)[0].lower()


def make_store(spec: str, dim: int, **kw: Any) -> VectorStore:
    """A new, empty store: `make_store("faiss", 384)`, `make_store("faiss:hnsw", 384, ef_search=256)`,
    `make_store("qdrant", 384, path="/tmp/q")`, `make_store("numpy", 384)`."""
    store: VectorStore = registry.STORES.create(spec, dim=dim, **kw)
    return store


def load_store(directory: str | Path, mmap: bool = True, verify: bool = True, **kw: Any) -> VectorStore:
    """Open a saved store; the backend is read from its `store.json`. Corrupted files raise IndexError_."""
    from culturekb.retrieval._integrity import read_meta

    directory = Path(directory)
    meta = read_meta(directory / STORE_META, "store metadata")
    backend = meta.get("backend")
    if not isinstance(backend, str):
        raise IndexError_(f"{directory / STORE_META}: 'backend' is missing; the file is corrupted, rebuild the index")
    fmt = meta.get("format")
    if fmt != STORE_FORMAT:
        raise IndexError_(
            f"{directory / STORE_META}: store format {fmt!r} is not the supported {STORE_FORMAT}; "
            "rebuild the index with this culturekb version (`culturekb index`)"
        )
    cls = _resolve(backend)
    store: VectorStore = cls.load(directory, meta=meta, mmap=mmap, verify=verify, **kw)
    return store


# -- input checks shared by the backends ------------------------------------------------------------------
def check_add_inputs(
    dim: int, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]], *,
    existing: Container[str] = (), read_only: str | None = None,
) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
    """Validate one `add` batch; returns ids, C-contiguous float32 unit rows and payload copies.

    `read_only`, when given, is why the store refuses writes (a ConfigError with that message); an id already
    in `existing` is refused too.
    """
    if read_only is not None:
        raise ConfigError(read_only)
    vecs = np.asarray(vectors, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[1] != dim:
        raise DataError(f"vectors must have shape (n, {dim}); got {vecs.shape}. Encode with the store's embedder.")
    if not (len(ids) == len(payloads) == vecs.shape[0]):
        raise DataError(
            f"add: {len(ids)} ids, {vecs.shape[0]} vectors and {len(payloads)} payloads; give one of each per item"
        )
    id_list = [str(i) for i in ids]
    if len(set(id_list)) != len(id_list):
        raise DataError("add: ids must be unique within a batch")
    clash = next((i for i in id_list if i in existing), None)
    if clash is not None:
        raise DataError(f"add: id {clash!r} is already in the store; ids must be unique")
    pays: list[dict[str, Any]] = []
    for i, p in enumerate(payloads):
        c = p.get("culture") if isinstance(p, Mapping) else None
        if not isinstance(c, str) or not c:
            raise DataError(f"add: payload {i} (id {id_list[i]!r}) has no 'culture' string; every vector needs one")
        pays.append(dict(p))
    if not np.isfinite(vecs).all():
        raise DataError("add: vectors contain NaN or infinity; check the embedder output")
    norms = np.linalg.norm(vecs, axis=1)
    if (norms < 1e-12).any():
        bad = int(np.argmax(norms < 1e-12))
        raise DataError(f"add: vector {bad} (id {id_list[bad]!r}) is all zeros; it has no direction to compare")
    if np.abs(norms - 1.0).max(initial=0.0) > 1e-3:
        vecs = vecs / norms[:, None]
    return id_list, np.ascontiguousarray(vecs, dtype=np.float32), pays


def check_queries(dim: int, query_vectors: np.ndarray, k: int) -> np.ndarray:
    """Validate a search batch; a 1-D vector is one query. Returns C-contiguous float32 unit rows (cosine scores)."""
    if not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"k must be a positive integer; got {k!r}")
    q = np.asarray(query_vectors, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != dim:
        raise DataError(
            f"query vectors must have shape (n, {dim}); got {q.shape}. Use the embedder the index was built with."
        )
    if q.shape[0] == 0:
        return np.ascontiguousarray(q)
    if not np.isfinite(q).all():
        raise DataError("query vectors contain NaN or infinity; check the embedder output")
    norms = np.linalg.norm(q, axis=1)
    if (norms < 1e-12).any():
        raise DataError(f"query vector {int(np.argmax(norms < 1e-12))} is all zeros; it has no direction to compare")
    if np.abs(norms - 1.0).max() > 1e-4:
        q = q / norms[:, None]
    return np.ascontiguousarray(q, dtype=np.float32)


def culture_list(culture: CultureFilter) -> list[str] | None:
    """Normalise a culture filter to a list of ids (None means every culture)."""
    if culture is None:
        return None
    if isinstance(culture, str):
        return [culture]
    out = [str(c) for c in culture]
    return out
