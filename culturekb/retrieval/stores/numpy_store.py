"""Exact search with numpy: the reference every other backend is tested against."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError
from culturekb.retrieval.stores._partitioned import Part, PartitionedStore

__all__ = ["NumpyStore"]

_SCORE_BLOCK = 1 << 24
"""Largest query x vector score block computed at once (floats), to bound memory at 10^6 vectors."""


class NumpyStore(PartitionedStore):
    """Brute-force inner product over float32 matrices, one per culture. Exact; O(n) per query."""

    backend = "numpy"
    data_suffix = ".npy"

    def __init__(self, argument: str = "", *, dim: int) -> None:
        """`argument` is what follows ':' in the spec; the numpy store takes none."""
        if argument:
            raise ConfigError(f"store 'numpy:{argument}': the numpy store takes no value after ':'; use 'numpy'")
        super().__init__(dim)

    @classmethod
    def _from_meta(cls, meta: dict[str, Any]) -> NumpyStore:
        return cls(dim=int(meta["dim"]))

    @staticmethod
    def _matrix(part: Part) -> np.ndarray:
        if isinstance(part.data, list):
            part.data = np.concatenate(part.data) if len(part.data) > 1 else part.data[0]
        return part.data  # type: ignore[no-any-return]

    def _part_add(self, part: Part, vectors: np.ndarray) -> None:
        if part.data is None:
            part.data = [vectors]
        elif isinstance(part.data, list):
            part.data.append(vectors)
        else:
            part.data = [np.asarray(part.data), vectors]

    def _part_rows(self, part: Part) -> int:
        return 0 if part.data is None else int(self._matrix(part).shape[0])

    def _part_search(self, part: Part, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        mat = self._matrix(part)
        n = mat.shape[0]
        step = max(1, _SCORE_BLOCK // max(n, 1))
        scores_out = np.empty((queries.shape[0], k), dtype=np.float32)
        rows_out = np.empty((queries.shape[0], k), dtype=np.int64)
        for start in range(0, queries.shape[0], step):
            s = queries[start : start + step] @ mat.T
            if k < n:
                top = np.argpartition(-s, k - 1, axis=1)[:, :k]
                ts = np.take_along_axis(s, top, axis=1)
                order = np.argsort(-ts, axis=1, kind="stable")
                rows = np.take_along_axis(top, order, axis=1)
            else:
                rows = np.argsort(-s, axis=1, kind="stable")[:, :k]
            scores_out[start : start + step] = np.take_along_axis(s, rows, axis=1)
            rows_out[start : start + step] = rows
        return scores_out, rows_out

    def _part_write(self, part: Part, path: Path) -> None:
        with open(path, "wb") as fh:
            np.save(fh, np.ascontiguousarray(self._matrix(part), dtype=np.float32))

    def _part_read(self, part: Part, path: Path, mmap: bool) -> None:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        if arr.ndim != 2 or arr.shape[1] != self.dim or arr.dtype != np.float32:
            raise ValueError(f"expected float32 array (n, {self.dim}), found {arr.dtype} {arr.shape}")
        part.data = arr
