"""Shared machinery of the in-process stores (numpy, faiss): one partition per culture.

Why partitions: a culture filter then costs nothing and can never leak another culture's vector (the
retriever's main guarantee), each partition is smaller than the whole (faster exact search, better
approximate recall), and a search over several cultures is a merge of per-partition top-k lists.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from culturekb._io import atomic_dir, atomic_write_json
from culturekb.errors import ConfigError, IndexError_
from culturekb.retrieval._integrity import file_manifest, read_meta, verify_files
from culturekb.retrieval.stores.base import (
    STORE_FORMAT,
    STORE_META,
    CultureFilter,
    SearchResult,
    check_add_inputs,
    check_queries,
    culture_list,
)

__all__ = ["Part", "PartitionedStore"]

log = logging.getLogger(__name__)


@dataclass
class Part:
    """The vectors of one culture: ids and payloads in row order, plus the backend's data."""

    culture: str
    ids: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    data: Any = None


class PartitionedStore:
    """Base of NumpyStore and FaissStore. Subclasses implement the four `_part_*` hooks and `_config`."""

    backend: str = ""
    data_suffix: str = ""

    def __init__(self, dim: int) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"store dimension must be a positive integer; got {dim!r}")
        self.dim = dim
        self._parts: dict[str, Part] = {}
        self._id_set: set[str] = set()
        self.read_only = False
        self.source: Path | None = None

    # -- hooks ----------------------------------------------------------------------------------------
    def _part_add(self, part: Part, vectors: np.ndarray) -> None:
        raise NotImplementedError

    def _part_search(self, part: Part, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), both (nq, k'), rows -1 where there is no result."""
        raise NotImplementedError

    def _part_write(self, part: Part, path: Path) -> None:
        raise NotImplementedError

    def _part_read(self, part: Part, path: Path, mmap: bool) -> None:
        raise NotImplementedError

    def _config(self) -> dict[str, Any]:
        return {}

    # -- contract -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(len(p.ids) for p in self._parts.values())

    def cultures(self) -> list[str]:
        return sorted(c for c, p in self._parts.items() if p.ids)

    def close(self) -> None:
        """Nothing to release for in-process stores."""

    def add(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        refused = (f"this {self.backend} store was loaded memory-mapped and is read-only; "
                   "load it with mmap=False to add vectors, or build a new index")
        id_list, vecs, pays = check_add_inputs(self.dim, ids, vectors, payloads, existing=self._id_set,
                                               read_only=refused if self.read_only else None)
        by_culture: dict[str, list[int]] = {}
        for row, p in enumerate(pays):
            by_culture.setdefault(p["culture"], []).append(row)
        for culture, rows in by_culture.items():
            part = self._parts.setdefault(culture, Part(culture))
            sel = np.asarray(rows, dtype=np.int64)
            self._part_add(part, np.ascontiguousarray(vecs[sel]))
            part.ids.extend(id_list[r] for r in rows)
            part.payloads.extend(pays[r] for r in rows)
        self._id_set.update(id_list)

    def search(self, query_vectors: np.ndarray, k: int = 1, culture: CultureFilter = None) -> SearchResult:
        q = check_queries(self.dim, query_vectors, k)
        wanted = culture_list(culture)
        names = sorted(self._parts) if wanted is None else [c for c in dict.fromkeys(wanted) if c in self._parts]
        parts = [self._parts[c] for c in names if self._parts[c].ids]
        if not parts or q.shape[0] == 0:
            return [[] for _ in range(q.shape[0])]
        scores_l, rows_l, part_l = [], [], []
        for pi, part in enumerate(parts):
            part_scores, part_rows = self._part_search(part, q, min(k, len(part.ids)))
            scores_l.append(np.where(part_rows >= 0, part_scores, -np.inf).astype(np.float32))
            rows_l.append(part_rows)
            part_l.append(np.full(part_rows.shape[1], pi, dtype=np.int64))
        scores = np.concatenate(scores_l, axis=1)
        rows = np.concatenate(rows_l, axis=1)
        owner = np.concatenate(part_l)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        out: SearchResult = []
        for qi in range(q.shape[0]):
            hits: list[tuple[str, float]] = []
            for col in order[qi]:
                r = int(rows[qi, col])
                sc = float(scores[qi, col])
                if r < 0 or sc == -np.inf:
                    continue
                hits.append((parts[int(owner[col])].ids[r], sc))
            out.append(hits)
        return out

    def payload(self, id_: str) -> dict[str, Any]:
        """The payload stored with an id (linear scan; meant for inspection, not the hot path)."""
        for part in self._parts.values():
            if id_ in part.ids:
                return dict(part.payloads[part.ids.index(id_)])
        raise KeyError(id_)

    # -- persistence ----------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write `store.json`, one `part-NNNN.json` (ids, payloads) and one data file per culture, atomically."""
        directory = Path(directory)
        with atomic_dir(directory) as tmp:
            parts_meta = []
            names: list[str] = []
            for i, culture in enumerate(sorted(self._parts)):
                part = self._parts[culture]
                stem = f"part-{i:04d}"
                atomic_write_json(
                    tmp / f"{stem}.json", {"culture": culture, "ids": part.ids, "payloads": part.payloads}
                )
                self._part_write(part, tmp / f"{stem}{self.data_suffix}")
                names += [f"{stem}.json", f"{stem}{self.data_suffix}"]
                parts_meta.append({"culture": culture, "stem": stem, "count": len(part.ids)})
            meta = {
                "format": STORE_FORMAT,
                "backend": self.backend,
                "dim": self.dim,
                "count": len(self),
                "config": self._config(),
                "parts": parts_meta,
                "files": file_manifest(tmp, names),
            }
            atomic_write_json(tmp / STORE_META, meta)
        log.info("saved %s store (%d vectors, %d cultures) to %s", self.backend, len(self), len(parts_meta), directory)
        return directory

    @classmethod
    def _from_meta(cls, meta: dict[str, Any]) -> PartitionedStore:
        raise NotImplementedError

    @classmethod
    def load(
        cls, directory: str | Path, meta: dict[str, Any] | None = None, mmap: bool = True, verify: bool = True, **_: Any
    ) -> PartitionedStore:
        """Open a saved store; with mmap=True the vectors stay on disk (read-only) where the format allows."""
        directory = Path(directory)
        meta = meta if meta is not None else read_meta(directory / STORE_META, "store metadata")
        if meta.get("backend") != cls.backend:
            raise IndexError_(
                f"{directory} holds a {meta.get('backend')!r} store, not {cls.backend!r}; load it with load_store()"
            )
        files = meta.get("files")
        parts_meta = meta.get("parts")
        if not isinstance(files, dict) or not isinstance(parts_meta, list):
            raise IndexError_(
                f"{directory / STORE_META}: 'files' or 'parts' missing; the file is corrupted, rebuild the index"
            )
        verify_files(directory, files, verify_hash=verify)
        store = cls._from_meta(meta)
        for pm in parts_meta:
            stem, culture = pm["stem"], pm["culture"]
            items = read_meta(directory / f"{stem}.json", "store id list")
            part = Part(culture, list(items.get("ids", [])), list(items.get("payloads", [])))
            try:
                store._part_read(part, directory / f"{stem}{store.data_suffix}", mmap)
            except (RuntimeError, ValueError, OSError, EOFError) as exc:
                raise IndexError_(
                    f"cannot read {directory / (stem + store.data_suffix)} ({exc}); the index file is corrupted or "
                    "truncated, rebuild it with `culturekb index --kb <KB_DIR> --backend <BACKEND>`"
                ) from exc
            if (
                len(part.ids) != pm["count"]
                or len(part.payloads) != len(part.ids)
                or store._part_rows(part) != len(part.ids)
            ):
                raise IndexError_(
                    f"{directory}: culture {culture!r} lists {pm['count']} vectors but its files hold "
                    f"{len(part.ids)} ids and {store._part_rows(part)} vectors; rebuild the index"
                )
            store._parts[culture] = part
            store._id_set.update(part.ids)
        store.read_only = mmap
        store.source = directory
        return store

    def _part_rows(self, part: Part) -> int:
        raise NotImplementedError
