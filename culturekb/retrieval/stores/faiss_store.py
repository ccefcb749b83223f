"""FAISS store, the embedded default: one FAISS index per culture, flat or approximate by size.

Index kind per culture partition, fixed by that partition's first `add`:

- ``flat`` (exact inner product, ``IndexFlatIP``): the default up to `flat_max` vectors per culture
  (100,000). Batched flat search uses BLAS and is hard to beat on 2 cores: at 10^5 vectors (3 cultures)
  about 1,900-2,200 filtered queries/s, at 10^6 about 200-440 (benchmarks/results/bench_stores.md).
- ``ivf`` (``IndexIVFFlat``): the default approximate index above `flat_max`. nlist = 2 sqrt(n) per culture,
  k-means (10 iterations) on a seeded sample of max(64 nlist, 10,000) vectors; ``nprobe`` defaults to
  `auto_nprobe(nlist)` = max(8, nlist / 10), which gave recall@1 0.995-0.996 against exact search at 10^4,
  10^5 and 10^6 vectors. Cheap to build (45 s for 10^6 x 384 on 2 cores) and memory-mappable.
- ``hnsw`` (``IndexHNSWFlat``, M=32, efConstruction=80; ``approx="hnsw"`` or ``kind="hnsw"``): recall@1 1.0
  at ``ef_search`` 64 on 10^5 vectors, but its build is slow on small machines (50-70 s for 10^5 on 2
  cores, so about 10 min for 10^6), which is why IVF is the default.

Culture filtering: one sub-index per culture (see `_partitioned.py`), so a filtered search only touches the
wanted cultures' indexes and can never return another culture's vector; several cultures are merged by score.

Memory-mapped load (``mmap=True``): flat and HNSW indexes are opened with ``IO_FLAG_MMAP_IFC`` (the vectors
stay in the page cache, not in private memory), IVF with ``IO_FLAG_MMAP`` (the inverted lists are mapped).
A memory-mapped store is read-only.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError, require
from culturekb.retrieval.stores._partitioned import Part, PartitionedStore

__all__ = ["FaissStore", "FLAT_MAX", "KINDS", "auto_nprobe"]

log = logging.getLogger(__name__)

FLAT_MAX = 100_000
KINDS = ("auto", "flat", "hnsw", "ivf")


def auto_nprobe(nlist: int) -> int:
    """Default IVF nprobe: a tenth of the lists, at least 8 (recall@1 >= 0.99 in benchmarks/bench_stores.py)."""
    return max(8, math.ceil(nlist / 10))


def _faiss() -> Any:
    return require("faiss", "retrieval", "The FAISS vector store")


class FaissStore(PartitionedStore):
    """FAISS inner-product indexes, one per culture (see the module docstring for the kinds)."""

    backend = "faiss"
    data_suffix = ".faiss"

    def __init__(
        self,
        dim: int,
        kind: str = "auto",
        *,
        approx: str = "ivf",
        flat_max: int = FLAT_MAX,
        hnsw_m: int = 32,
        ef_construction: int = 80,
        ef_search: int = 128,
        nlist: int | None = None,
        nprobe: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(dim)
        if kind not in KINDS:
            raise ConfigError(f"unknown FAISS index kind {kind!r}; choose one of: {', '.join(KINDS)}")
        if approx not in ("hnsw", "ivf"):
            raise ConfigError(f"approx must be 'hnsw' or 'ivf'; got {approx!r}")
        self.kind = kind
        self.approx = approx
        self.flat_max = int(flat_max)
        self.hnsw_m = int(hnsw_m)
        self.ef_construction = int(ef_construction)
        self.ef_search = int(ef_search)
        self.nlist = nlist
        self.nprobe = None if nprobe is None else int(nprobe)
        self.seed = int(seed)
        self._faiss = _faiss()
        self._kinds: dict[str, str] = {}

    def _config(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "approx": self.approx,
            "flat_max": self.flat_max,
            "hnsw_m": self.hnsw_m,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "nlist": self.nlist,
            "nprobe": self.nprobe,
            "seed": self.seed,
            "part_kinds": dict(sorted(self._kinds.items())),
        }

    @classmethod
    def _from_meta(cls, meta: dict[str, Any]) -> FaissStore:
        cfg = dict(meta.get("config", {}))
        kinds = cfg.pop("part_kinds", {})
        store = cls(int(meta["dim"]), **cfg)
        store._kinds = dict(kinds)
        return store

    @classmethod
    def load(  # type: ignore[override]
        cls,
        directory: str | Path,
        meta: dict[str, Any] | None = None,
        mmap: bool = True,
        verify: bool = True,
        ef_search: int | None = None,
        nprobe: int | None = None,
        **kw: Any,
    ) -> FaissStore:
        """Open a saved FAISS store; `ef_search` / `nprobe` override the saved search parameters."""
        store = super().load(directory, meta=meta, mmap=mmap, verify=verify, **kw)
        assert isinstance(store, FaissStore)
        if ef_search is not None:
            store.ef_search = int(ef_search)
        if nprobe is not None:
            store.nprobe = int(nprobe)
        return store

    def part_kinds(self) -> dict[str, str]:
        """The index kind chosen for each culture."""
        return dict(self._kinds)

    # -- hooks ----------------------------------------------------------------------------------------
    def _choose(self, n: int) -> str:
        if self.kind != "auto":
            return self.kind
        return "flat" if n <= self.flat_max else self.approx

    def _new_index(self, kind: str, vectors: np.ndarray) -> Any:
        faiss = self._faiss
        if kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        if kind == "hnsw":
            idx = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = self.ef_construction
            return idx
        n = vectors.shape[0]
        nlist = self.nlist or max(1, int(round(2 * math.sqrt(n))))
        nlist = max(1, min(nlist, n // 39 if n >= 39 else 1))
        quantizer = faiss.IndexFlatIP(self.dim)
        idx = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        n_train = min(n, max(64 * nlist, 10_000))
        rng = np.random.default_rng(self.seed)
        sample = vectors if n_train >= n else vectors[np.sort(rng.choice(n, n_train, replace=False))]
        idx.cp.seed = self.seed
        idx.cp.niter = 10
        idx.train(np.ascontiguousarray(sample))
        return idx

    def _part_add(self, part: Part, vectors: np.ndarray) -> None:
        if part.data is None:
            kind = self._choose(vectors.shape[0])
            part.data = self._new_index(kind, vectors)
            self._kinds[part.culture] = kind
            log.debug("faiss: culture %s uses a %s index", part.culture, kind)
        part.data.add(vectors)

    def _part_rows(self, part: Part) -> int:
        return 0 if part.data is None else int(part.data.ntotal)

    def _part_search(self, part: Part, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        idx = part.data
        kind = self._kinds.get(part.culture, "flat")
        if kind == "hnsw":
            idx.hnsw.efSearch = max(self.ef_search, k)
        elif kind == "ivf":
            idx.nprobe = max(1, min(self.nprobe or auto_nprobe(idx.nlist), idx.nlist))
        scores, rows = idx.search(queries, k)
        return scores, rows

    def _part_write(self, part: Part, path: Path) -> None:
        self._faiss.write_index(part.data, str(path))

    def _part_read(self, part: Part, path: Path, mmap: bool) -> None:
        faiss = self._faiss
        kind = self._kinds.get(part.culture)
        if kind is None:
            raise ValueError(f"no index kind recorded for culture {part.culture!r}")
        flags = 0
        if mmap:
            flags = faiss.IO_FLAG_MMAP if kind == "ivf" else faiss.IO_FLAG_MMAP_IFC
        idx = faiss.read_index(str(path), flags)
        if idx.d != self.dim:
            raise ValueError(f"index has dimension {idx.d}, expected {self.dim}")
        part.data = idx
