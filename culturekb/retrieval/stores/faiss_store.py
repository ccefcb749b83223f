"""FAISS store, the embedded default: one FAISS index per culture, flat or approximate by size.

Index kind per culture partition, fixed by that partition's first `add`:

- ``flat`` (exact inner product, ``IndexFlatIP``): the default up to `flat_max` vectors per culture
  (100,000). Batched flat search uses BLAS and is hard to beat on 2 cores: on real held-out concept queries
  at 33,333 vectors per culture (10^5 in all) flat answers about 700 queries/s, IVF at recall@1 >= 0.99 about
  280 (benchmarks/results/bench_stores.md).
- ``ivf`` (``IndexIVFFlat``): the default approximate index above `flat_max`; nlist and nprobe by the
  culture's size (`TUNED`, `approx_params`), k-means (10 iterations) on a seeded sample of
  max(40 nlist, 10,000) vectors. Real concept queries are far from their neighbours (median top-1 cosine
  0.7-0.8), so IVF needs many probes: at 333,333 vectors per culture (10^6 in all) nlist 4 sqrt(n) with
  nprobe 128 gives recall@1 0.993 at 3.5x flat's queries/s. Cheap to build and memory-mappable.
- ``hnsw`` (``IndexHNSWFlat``; ``approx="hnsw"`` or ``kind="hnsw"``): M, efConstruction and efSearch by size
  (`TUNED`). Fast to query, slow to build on small machines (about 45 s for 10^5 vectors on 2 cores, so
  10 minutes or more for 10^6), which is why IVF is the default.

Parameters given to the constructor (``nlist``, ``nprobe``, ``hnsw_m``, ``ef_construction``, ``ef_search``)
or to `load` (``nprobe``, ``ef_search``) win over the table; the chosen ones are recorded per culture in
``store.json`` (`part_params`) and reused on load.

Culture filtering: one sub-index per culture (see `_partitioned.py`), so a filtered search only touches the
wanted cultures' indexes and can never return another culture's vector; several cultures are merged by score.

Memory-mapped load (``mmap=True``): flat and HNSW indexes are opened with ``IO_FLAG_MMAP_IFC`` (the vectors
stay in the page cache, not in private memory), IVF with ``IO_FLAG_MMAP`` (the inverted lists are mapped).
A memory-mapped store is read-only.
"""

from __future__ import annotations

import errno
import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError, require
from culturekb.retrieval.stores._partitioned import Part, PartitionedStore

__all__ = ["FaissStore", "FLAT_MAX", "KINDS", "TUNED", "approx_params"]

log = logging.getLogger(__name__)

FLAT_MAX = 100_000
KINDS = ("auto", "flat", "hnsw", "ivf")

# Per-culture index size -> approximate index parameters; the first row with n <= max_n applies. Measured in
# benchmarks/bench_stores.py (results/bench_stores.md) on 1,000 held-out real concept queries (MiniLM), k=1,
# recall@1 against exact search, 2 cores under load:
# - IVF, n = 3,333 per culture (nlist 85): nprobe 16 -> 0.977, 32 -> 0.996.
# - IVF, n = 33,333 (nlist 365): nprobe 64 -> 0.985, 128 -> 0.999 (flat is faster here: 700 vs 280 queries/s).
# - IVF, n = 333,333: nlist 1,155 (2 sqrt n) needs nprobe 96 for 0.990, only 2.0x flat's queries/s; nlist 2,310
#   (4 sqrt n) gives 0.989 at nprobe 96 and 0.993 at 128 (3.5x flat), so above 150,000 vectors nlist is 4 sqrt n.
#   In the recorded run (results/bench_stores.md) the by-size choice gave 0.991 at 3.66x flat (443 vs 121 q/s).
# - HNSW, n = 3,333: M 16, efConstruction 64: efSearch 64 -> 0.990. n = 33,333: M 16 / efC 64 reaches only
#   0.986 at efSearch 256, hence M 32 / efC 128 above 20,000 vectors: efSearch 128 -> 0.991 (2.05x flat,
#   49 s to build 10^5 on 2 cores); the table keeps efSearch 256 for margin.
TUNED: dict[str, list[dict[str, int]]] = {
    "ivf": [
        {"max_n": 20_000, "lists_per_sqrt_n": 2, "nprobe": 32},
        {"max_n": 150_000, "lists_per_sqrt_n": 2, "nprobe": 128},
        {"max_n": 2**62, "lists_per_sqrt_n": 4, "nprobe": 128},
    ],
    "hnsw": [
        {"max_n": 20_000, "m": 16, "ef_construction": 64, "ef_search": 64},
        {"max_n": 2**62, "m": 32, "ef_construction": 128, "ef_search": 256},
    ],
}
IVF_TRAIN_PER_LIST = 40  # k-means sample: 40 vectors per list (FAISS warns below 39), at least 10,000


def approx_params(kind: str, n: int, nlist: int | None = None) -> dict[str, int]:
    """Parameters of an approximate index over `n` vectors (one culture), tuned in benchmarks/bench_stores.py.

    See `TUNED` for the figures. IVF: nlist = c sqrt(n) and nprobe from the row of the size (`nlist` given:
    only nprobe is chosen). HNSW: M, efConstruction, efSearch from the row of the size.
    """
    row = next(r for r in TUNED[kind] if n <= r["max_n"])
    if kind == "ivf":
        lists = nlist or max(1, int(round(row["lists_per_sqrt_n"] * math.sqrt(max(n, 1)))))
        return {"nlist": lists, "nprobe": max(1, min(lists, int(row["nprobe"])))}
    return {"m": int(row["m"]), "ef_construction": int(row["ef_construction"]), "ef_search": int(row["ef_search"])}


def _faiss() -> Any:
    return require("faiss", "retrieval", "The FAISS vector store")


class FaissStore(PartitionedStore):
    """FAISS inner-product indexes, one per culture (see the module docstring for the kinds)."""

    backend = "faiss"
    data_suffix = ".faiss"

    def __init__(
        self,
        kind: str = "auto",
        *,
        dim: int,
        approx: str = "ivf",
        flat_max: int = FLAT_MAX,
        hnsw_m: int | None = None,
        ef_construction: int | None = None,
        ef_search: int | None = None,
        nlist: int | None = None,
        nprobe: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(dim)
        kind = kind.strip().lower() or "auto"  # the spec's argument: "faiss:hnsw"
        if kind not in KINDS:
            raise ConfigError(f"unknown FAISS index kind {kind!r}; choose one of: {', '.join(KINDS)}")
        if approx not in ("hnsw", "ivf"):
            raise ConfigError(f"approx must be 'hnsw' or 'ivf'; got {approx!r}")
        self.kind = kind
        self.approx = approx
        self.flat_max = int(flat_max)
        self.hnsw_m = None if hnsw_m is None else int(hnsw_m)
        self.ef_construction = None if ef_construction is None else int(ef_construction)
        self.ef_search = None if ef_search is None else int(ef_search)
        self.nlist = nlist
        self.nprobe = None if nprobe is None else int(nprobe)
        self.seed = int(seed)
        self._faiss = _faiss()
        self._kinds: dict[str, str] = {}
        self._params: dict[str, dict[str, int]] = {}

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
            "part_params": {c: dict(p) for c, p in sorted(self._params.items())},
        }

    @classmethod
    def _from_meta(cls, meta: dict[str, Any]) -> FaissStore:
        cfg = dict(meta.get("config", {}))
        kinds = cfg.pop("part_kinds", {})
        params = cfg.pop("part_params", {})
        store = cls(dim=int(meta["dim"]), **cfg)
        store._kinds = dict(kinds)
        store._params = {c: {k: int(v) for k, v in p.items()} for c, p in params.items()}
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

    def part_params(self) -> dict[str, dict[str, int]]:
        """The parameters each culture's index was built with and is searched with (none for flat)."""
        out: dict[str, dict[str, int]] = {}
        for culture, kind in self._kinds.items():
            built = dict(self._params.get(culture, {}))
            if kind == "hnsw":
                built["ef_search"] = self._ef_search(culture)
            elif kind == "ivf":
                built["nprobe"] = self._nprobe(culture)
            out[culture] = built
        return out

    def _ef_search(self, culture: str) -> int:
        p = self._params.get(culture, {})
        return self.ef_search or p.get("ef_search") or approx_params("hnsw", p.get("n", 0))["ef_search"]

    def _nprobe(self, culture: str) -> int:
        p = self._params.get(culture, {})
        nlist = p.get("nlist", 1)
        chosen = self.nprobe or p.get("nprobe") or approx_params("ivf", p.get("n", 0), nlist=nlist)["nprobe"]
        return max(1, min(chosen, nlist))

    # -- hooks ----------------------------------------------------------------------------------------
    def _choose(self, n: int) -> str:
        if self.kind != "auto":
            return self.kind
        return "flat" if n <= self.flat_max else self.approx

    def _new_index(self, culture: str, kind: str, vectors: np.ndarray) -> Any:
        faiss = self._faiss
        n = vectors.shape[0]
        if kind == "flat":
            return faiss.IndexFlatIP(self.dim)
        if kind == "hnsw":
            tuned = approx_params("hnsw", n)
            m = self.hnsw_m or tuned["m"]
            ef_construction = self.ef_construction or tuned["ef_construction"]
            idx = faiss.IndexHNSWFlat(self.dim, m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = ef_construction
            self._params[culture] = {"n": n, "m": m, "ef_construction": ef_construction,
                                     "ef_search": tuned["ef_search"]}
            return idx
        nlist = self.nlist or approx_params("ivf", n)["nlist"]
        nlist = max(1, min(nlist, n // 39 if n >= 39 else 1))
        quantizer = faiss.IndexFlatIP(self.dim)
        idx = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        n_train = min(n, max(IVF_TRAIN_PER_LIST * nlist, 10_000))
        rng = np.random.default_rng(self.seed)
        sample = vectors if n_train >= n else vectors[np.sort(rng.choice(n, n_train, replace=False))]
        idx.cp.seed = self.seed
        idx.cp.niter = 10
        idx.train(np.ascontiguousarray(sample))
        self._params[culture] = {"n": n, "nlist": nlist,
                                 "nprobe": approx_params("ivf", n, nlist=nlist)["nprobe"]}
        return idx

    def _part_add(self, part: Part, vectors: np.ndarray) -> None:
        if part.data is None:
            kind = self._choose(vectors.shape[0])
            part.data = self._new_index(part.culture, kind, vectors)
            self._kinds[part.culture] = kind
            log.debug("faiss: culture %s uses a %s index %s", part.culture, kind, self._params.get(part.culture))
        part.data.add(vectors)

    def _part_rows(self, part: Part) -> int:
        return 0 if part.data is None else int(part.data.ntotal)

    def _part_search(self, part: Part, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        idx = part.data
        kind = self._kinds.get(part.culture, "flat")
        if kind == "hnsw":
            idx.hnsw.efSearch = max(self._ef_search(part.culture), k)
        elif kind == "ivf":
            self._params.setdefault(part.culture, {}).setdefault("nlist", int(idx.nlist))
            idx.nprobe = self._nprobe(part.culture)
        from culturekb.models.threads import faiss_threads  # lazy: culturekb.models imports the chat clients

        with faiss_threads(self._faiss, len(queries)):  # one OpenMP thread for a few queries (thread policy)
            scores, rows = idx.search(queries, k)
        return scores, rows

    def _part_write(self, part: Part, path: Path) -> None:
        try:
            self._faiss.write_index(part.data, str(path))
        except RuntimeError as exc:  # FAISS reports a failed write (a full disk) as a RuntimeError
            raise _write_error(exc, path) from exc

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


def _write_error(exc: RuntimeError, path: Path) -> OSError:
    """The OSError behind FAISS's RuntimeError for a failed write (its text ends in the C library's message, such as
    "(No space left on device)"), so that the command line names the file and the fix as for any other write."""
    text = str(exc)
    code = next((c for c in sorted(errno.errorcode) if f"({os.strerror(c)})" in text), errno.EIO)
    return OSError(code, os.strerror(code), str(path))
