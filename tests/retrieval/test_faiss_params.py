"""The FAISS store picks its approximate-index parameters by each culture's size (`TUNED`), records them, and
keeps them across save and load; explicit arguments win."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from culturekb.retrieval.stores import load_store, make_store
from culturekb.retrieval.stores.faiss_store import TUNED, FaissStore, approx_params

DIM = 16


def _data(n: int, seed: int = 0) -> tuple[list[str], np.ndarray, list[dict[str, str]]]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [f"v{i}" for i in range(n)], v, [{"culture": ("en", "zh")[i % 2]} for i in range(n)]


def test_table_rows_cover_every_size_and_grow_with_it() -> None:
    for kind, rows in TUNED.items():
        assert [r["max_n"] for r in rows] == sorted(r["max_n"] for r in rows), kind
        assert rows[-1]["max_n"] >= 10**12
    small, mid, large = approx_params("ivf", 3_333), approx_params("ivf", 33_333), approx_params("ivf", 333_333)
    assert small == {"nlist": round(2 * math.sqrt(3_333)), "nprobe": 32}
    assert mid["nprobe"] == 128 and mid["nlist"] == round(2 * math.sqrt(33_333))
    assert large["nlist"] == round(4 * math.sqrt(333_333)) and large["nprobe"] == 128
    assert approx_params("ivf", 50, nlist=4) == {"nlist": 4, "nprobe": 4}  # never more probes than lists
    assert approx_params("hnsw", 1_000)["m"] == 16
    assert approx_params("hnsw", 50_000) == {"m": 32, "ef_construction": 128, "ef_search": 256}


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_store_records_the_size_choice_and_reloads_it(kind: str, tmp_path: Path) -> None:
    ids, vecs, payloads = _data(800)
    store = make_store(f"faiss:{kind}", DIM)
    assert isinstance(store, FaissStore)
    store.add(ids, vecs, payloads)
    params = store.part_params()
    assert set(params) == {"en", "zh"}
    p = params["en"]
    if kind == "ivf":
        # 400 vectors: 2 sqrt(400) = 40 lists, capped at n // 39 = 10; nprobe never above nlist
        assert p["nlist"] == 10 and p["nprobe"] == 10
    else:
        assert (p["m"], p["ef_construction"], p["ef_search"]) == (16, 64, 64)
    store.save(tmp_path / kind)
    loaded = load_store(tmp_path / kind, mmap=True)
    assert isinstance(loaded, FaissStore)
    assert loaded.part_params() == params
    q = vecs[:5]
    assert loaded.search(q, k=3, culture="en") == store.search(q, k=3, culture="en")


def test_explicit_parameters_win_over_the_table(tmp_path: Path) -> None:
    ids, vecs, payloads = _data(800, seed=1)
    ivf = make_store("faiss:ivf", DIM, nlist=4, nprobe=2)
    hnsw = make_store("faiss:hnsw", DIM, hnsw_m=8, ef_search=20)
    assert isinstance(ivf, FaissStore) and isinstance(hnsw, FaissStore)
    ivf.add(ids, vecs, payloads)
    hnsw.add(ids, vecs, payloads)
    assert ivf.part_params()["zh"]["nlist"] == 4 and ivf.part_params()["zh"]["nprobe"] == 2
    assert hnsw.part_params()["zh"]["m"] == 8 and hnsw.part_params()["zh"]["ef_search"] == 20
    ivf.save(tmp_path / "ivf")
    reopened = load_store(tmp_path / "ivf", nprobe=3)  # a load-time setting overrides the recorded one
    assert isinstance(reopened, FaissStore) and reopened.part_params()["zh"]["nprobe"] == 3
    ivf.nprobe = None  # back to the table's nprobe for the recorded nlist
    assert ivf.part_params()["zh"]["nprobe"] == 4
