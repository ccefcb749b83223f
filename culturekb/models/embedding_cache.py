"""Query embeddings that outlive a process, and embedders that load on first use.

- `EmbeddingCache`: an SQLite file of (embedder key, text) -> float32 vector, bounded to `max_entries` (the oldest
  rows go first), safe with concurrent processes (WAL, busy timeout; each write is one transaction, so a reader
  sees all of a batch or none of it).
- `CachedEmbedder`: an `Embedder` that answers from the cache and encodes only what is missing; the wrapped
  embedder is never touched when every text is cached, so a lazy one is never even loaded.
- `LazyEmbedder`: an `Embedder` whose id and dim are known up front (from an index's metadata) and whose model is
  made on the first `encode`; a lookup answered by exact matches never loads it.

Why SQLite by hand and not diskcache (issue 14): measured side by side in one run
(`benchmarks/bench_sqlite_caches.py`, n = 2000, diskcache 5.6.3, 2 loaded cores;
benchmarks/results/sqlite_caches.md), diskcache took 6.4x as long to look up 2,000 texts (0.073 s vs 0.011 s) and
1.6x to store them keeping the newest 1,000 (0.260 s vs 0.167 s): it has no multi-key read (one `get` per text
instead of one query per batch) and bounds a cache by bytes, not rows. It would also pickle tuple keys, so a shared
cache folder would load pickles. The SQL here is a few statements; it stays.
"""

from __future__ import annotations

import inspect
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from culturekb._io import sqlite_wal
from culturekb.errors import ConfigError, IndexError_
from culturekb.models.base import Embedder

__all__ = ["DEFAULT_MAX_ENTRIES", "CachedEmbedder", "EmbeddingCache", "LazyEmbedder", "cache_key"]

DEFAULT_MAX_ENTRIES = 50_000
"""Rows kept per cache file (about 80 MB at 384 dimensions)."""
_CHUNK = 500  # texts per SELECT (SQLite's variable limit is 999 on old builds)


def cache_key(embedder: Embedder) -> str:
    """What identifies an embedder's vectors in the cache: its id, plus its spec and endpoint where it has them."""
    parts = [str(embedder.id)]
    for attr in ("spec", "base_url"):
        value = inspect.getattr_static(embedder, attr, None)  # never makes a lazy embedder's model
        if isinstance(value, str) and value and value not in parts:
            parts.append(value)
    return "|".join(parts)


class EmbeddingCache:
    """A bounded, process-safe SQLite store of text embeddings keyed by embedder key and text."""

    def __init__(self, path: str | Path, max_entries: int = DEFAULT_MAX_ENTRIES, timeout_s: float = 30.0) -> None:
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigError(f"embedding cache: max_entries must be a positive integer, got {max_entries!r}")
        self.path = Path(path)
        self.max_entries = max_entries
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            sqlite_wal(self._conn, timeout_s)
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key TEXT NOT NULL, text TEXT NOT NULL, dim INTEGER NOT NULL, "
                "vector BLOB NOT NULL, added REAL NOT NULL, PRIMARY KEY (key, text)) WITHOUT ROWID"
            )
            self._conn.execute("CREATE INDEX IF NOT EXISTS embeddings_added ON embeddings (added)")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the embedding cache {self.path}: {exc}; set the cache_dir setting to a "
                              "writable folder") from exc
        self._lock = threading.Lock()

    def get(self, key: str, texts: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """The cached vectors of those `texts` (rows of another dimension are ignored)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(texts))
        with self._lock:
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT text, vector FROM embeddings WHERE key = ? AND dim = ? AND text IN ({marks})",
                    [key, dim, *chunk],
                ).fetchall()
                for text, blob in rows:
                    if len(blob) == dim * 4:
                        found[text] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def put(self, key: str, vectors: dict[str, np.ndarray]) -> None:
        """Store vectors in one transaction, then drop the oldest rows beyond `max_entries`."""
        if not vectors:
            return
        now = time.time()
        rows = [(key, t, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes(), now) for t, v in vectors.items()]
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
                (count,) = self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()
                if count > self.max_entries:
                    self._conn.execute(
                        "DELETE FROM embeddings WHERE (key, text) IN "
                        "(SELECT key, text FROM embeddings ORDER BY added, key, text LIMIT ?)",
                        (count - self.max_entries,),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        return int(count)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


class CachedEmbedder:
    """`embedder` behind an `EmbeddingCache`: cached texts are read, the rest encoded (one call) and stored."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        self.inner = embedder
        self.cache = cache
        self.id = embedder.id
        spec = getattr(embedder, "spec", None)
        if isinstance(spec, str):
            self.spec = spec
        self.key = cache_key(embedder)
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self.inner.dim)

    @dim.setter
    def dim(self, value: int) -> None:
        self.inner.dim = int(value)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Shape (len(texts), dim), float32, unit rows: cached ones from disk, the others from the embedder."""
        if isinstance(texts, str):
            raise TypeError(f"{self.id}: encode() takes a sequence of strings, not one string; wrap it in a list")
        texts = list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            return self.inner.encode(texts, batch_size=batch_size)  # its own checks and messages
        dim = self.dim
        known = self.cache.get(self.key, texts, dim)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        self.hits += sum(1 for t in texts if t in known)
        self.misses += len(missing)
        if missing:
            vectors = np.asarray(self.inner.encode(missing, batch_size=batch_size), dtype=np.float32)
            new = dict(zip(missing, vectors, strict=True))
            self.cache.put(self.key, new)
            known.update(new)
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "cache"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {self.cache.path})"


class LazyEmbedder:
    """An embedder known by `embedder_id` and `dim` (from an index) and made by `make(spec)` on the first encode.

    The made embedder must have that id, or IndexError_ says so; anything but `id`, `spec`, `dim` and `encode`
    is read from the made embedder (and makes it).
    """

    def __init__(self, spec: str, embedder_id: str, dim: int, make: Callable[[str], Embedder]) -> None:
        self.spec = spec
        self.id = embedder_id
        self.dim = int(dim)
        self._make = make
        self._model: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been made."""
        return self._model is not None

    @property
    def model(self) -> Embedder:
        """The embedder itself, made on first use."""
        with self._lock:
            if self._model is None:
                made = self._make(self.spec)
                if str(made.id) != self.id or int(made.dim) != self.dim:
                    raise IndexError_(
                        f"embedder spec {self.spec!r} gives {made.id!r} (dim {made.dim}), but the index was built with "
                        f"{self.id!r} (dim {self.dim}); re-index the KB with `culturekb index --kb <KB_DIR>`"
                    )
                self._model = made
            return self._model

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """The model's `encode`; empty input answers without loading it."""
        if not isinstance(texts, str) and len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.model.encode(texts, batch_size=batch_size)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"LazyEmbedder(spec={self.spec!r}, id={self.id!r}, loaded={self.loaded})"


def _unwrap(embedder: Any) -> Any:
    """The innermost embedder under wrappers that hold theirs as `inner` (caches, the server's micro-batcher)."""
    while "inner" in vars(embedder):
        embedder = vars(embedder)["inner"]
    return embedder


WARM_UP_TEXT = "culturekb warm-up"


def warm_up(embedder: Any) -> bool:
    """Make the model behind a lazily made local embedder and run one forward pass, so that the first query does
    not pay for loading it (issue 25: the first semantic lookup of an API worker took about 8 s after `/readyz`
    said ready). The forward pass goes to the model itself: no cache, memo or counter sees it.

    Only embedders that load a model lazily are warmed (a `LazyEmbedder` in the chain: made from an index's spec;
    or a model that says whether it is `loaded`, such as the packaged MiniLM), never a remote one
    (`openai-embed:`, or one with a `base_url`); returns whether this one was."""
    model = _unwrap(embedder)
    if isinstance(model, LazyEmbedder):
        if model.spec.startswith("openai-embed:"):
            return False
        model = _unwrap(model.model)
    elif "loaded" not in dir(type(model)):
        return False
    if getattr(model, "base_url", None) is not None:
        return False
    encode_new = getattr(model, "_encode_new", None)  # a memo encoder: bypass its memo
    if encode_new is not None:
        encode_new([WARM_UP_TEXT], 1)
    else:
        model.encode([WARM_UP_TEXT])
    return True
