"""The on-disk query-embedding cache: hits, the size bound, keys per embedder, concurrent processes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.models.embedding_cache import CachedEmbedder, EmbeddingCache, cache_key
from culturekb.testing import hash_embedding


class CountingEmbedder:
    """Deterministic hash vectors; records every encode call."""

    def __init__(self, id_: str = "hash:test", dim: int = 16) -> None:
        self.id, self.spec, self.dim = id_, id_, dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([hash_embedding(t, self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)


def test_hits_skip_the_encoder_and_give_the_same_vectors(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, EmbeddingCache(tmp_path / "q.sqlite"))
    first = emb.encode(["moon", "lotus", "moon"])
    assert inner.calls == [["moon", "lotus"]] and (emb.hits, emb.misses) == (0, 2)
    again = CachedEmbedder(inner, EmbeddingCache(tmp_path / "q.sqlite"))  # another process would see the same
    second = again.encode(["lotus", "moon", "crane"])
    assert inner.calls[-1] == ["crane"] and again.hits == 2
    np.testing.assert_array_equal(second[:2], first[[1, 0]])
    assert second.dtype == np.float32 and second.shape == (3, 16)
    assert again.encode([]).shape == (0, 16)


def test_vectors_are_kept_per_embedder(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "q.sqlite")
    a, b = CountingEmbedder("hash:a"), CountingEmbedder("hash:b", dim=8)
    CachedEmbedder(a, cache).encode(["moon"])
    out = CachedEmbedder(b, cache).encode(["moon"])
    assert b.calls == [["moon"]] and out.shape == (1, 8)  # another model's vector is never served
    assert cache_key(a) != cache_key(b) and len(cache) == 2


def test_size_is_bounded_oldest_first(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "q.sqlite", max_entries=5)
    inner = CountingEmbedder()
    emb = CachedEmbedder(inner, cache)
    for i in range(4):
        emb.encode([f"w{i}a", f"w{i}b"])
    assert len(cache) == 5
    kept = cache.get(emb.key, [f"w{i}{s}" for i in range(4) for s in "ab"], 16)
    assert set(kept) == {"w1b", "w2a", "w2b", "w3a", "w3b"}
    with pytest.raises(ConfigError, match="max_entries"):
        EmbeddingCache(tmp_path / "other.sqlite", max_entries=0)


def test_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ConfigError, match="cache_dir"):
        EmbeddingCache(tmp_path / "file" / "q.sqlite")


_WRITER = """
import sys
import numpy as np
from culturekb.models.embedding_cache import CachedEmbedder, EmbeddingCache
from culturekb.testing import hash_embedding

class Hash:
    id = spec = "hash:test"
    dim = 16
    def encode(self, texts, batch_size=64):
        return np.asarray([hash_embedding(t, 16) for t in texts], dtype=np.float32).reshape(-1, 16)

path, worker = sys.argv[1], sys.argv[2]
emb = CachedEmbedder(Hash(), EmbeddingCache(path, max_entries=10_000))
for r in range(30):
    emb.encode([f"shared {r}", f"own {worker} {r}"])
"""


def test_concurrent_processes_share_one_cache(tmp_path: Path) -> None:
    path = str(tmp_path / "q.sqlite")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, path, str(w)], stderr=subprocess.PIPE, text=True)
             for w in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    cache = EmbeddingCache(path)
    assert len(cache) == 30 + 3 * 30
    key = cache_key(CountingEmbedder())
    got = cache.get(key, ["shared 7", "own 2 29"], 16)
    np.testing.assert_allclose(got["shared 7"], hash_embedding("shared 7", 16), atol=1e-6)
    assert "own 2 29" in got
