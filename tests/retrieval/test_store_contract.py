"""One contract suite for every vector store: exact numpy is the reference the others must agree with."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from culturekb.errors import ConfigError, DataError, IndexError_, ProviderError
from culturekb.retrieval.stores import StoreUnavailableError, VectorStore, list_stores, load_store, make_store
from culturekb.retrieval.stores.faiss_store import FaissStore

DIM = 32
CULTURES = ("ar", "en", "zh")
PER_CULTURE = 80

Factory = Callable[[Path], VectorStore]

BACKENDS: dict[str, Factory] = {
    "numpy": lambda tmp: make_store("numpy", DIM),
    "faiss-flat": lambda tmp: make_store("faiss:flat", DIM),
    "faiss-hnsw": lambda tmp: make_store("faiss:hnsw", DIM, ef_search=256),
    "faiss-ivf": lambda tmp: make_store("faiss:ivf", DIM, nprobe=64),
    "faiss-auto": lambda tmp: make_store("faiss", DIM, flat_max=60),  # above 60 per culture -> IVF
    "qdrant-memory": lambda tmp: make_store("qdrant", DIM),
    "qdrant-path": lambda tmp: make_store("qdrant", DIM, path=tmp / "qdrant-live"),
}


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    n = PER_CULTURE * len(CULTURES)
    vecs = _unit(rng.standard_normal((n, DIM)))
    ids = [f"item-{i}" for i in range(n)]
    cultures = [CULTURES[i % len(CULTURES)] for i in range(n)]
    payloads = [{"culture": c, "concept": f"c{i}"} for i, c in enumerate(cultures)]
    near = vecs[rng.choice(n, 30, replace=False)] + 0.25 * rng.standard_normal((30, DIM)).astype(np.float32)
    queries = _unit(np.vstack([near, rng.standard_normal((10, DIM)).astype(np.float32)]))
    ref = make_store("numpy", DIM)
    ref.add(ids, vecs, payloads)
    return {"ids": ids, "vecs": vecs, "payloads": payloads, "queries": queries, "ref": ref,
            "culture_of": dict(zip(ids, cultures, strict=True))}


@pytest.fixture(scope="module")
def _shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache: dict[str, VectorStore] = {}
    yield cache
    for s in cache.values():
        s.close()


@pytest.fixture(params=list(BACKENDS))
def built(request: pytest.FixtureRequest, _shared: dict[str, VectorStore], data: dict[str, Any],
          tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    """A filled store shared by the read-only tests of one backend (Qdrant local filters are slow)."""
    if request.param not in _shared:
        s = BACKENDS[request.param](tmp_path_factory.mktemp(request.param))
        s.add(data["ids"], data["vecs"], data["payloads"])
        _shared[request.param] = s
    return _shared[request.param]


@pytest.fixture(params=list(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path, data: dict[str, Any]) -> Any:
    """A fresh filled store, for tests that change or close it."""
    s = BACKENDS[request.param](tmp_path)
    s.add(data["ids"], data["vecs"], data["payloads"])
    yield s
    s.close()


FILTERS: list[Any] = ["zh", ["en", "ar"], None]


def test_registry_lists_the_three_backends() -> None:
    assert {"numpy", "faiss", "qdrant"} <= set(list_stores())
    with pytest.raises(ConfigError, match="unknown vector store backend 'annoy'"):
        make_store("annoy", DIM)


@pytest.mark.parametrize("culture", FILTERS, ids=["one", "two", "all"])
def test_same_top1_as_exact_search(built: VectorStore, data: dict[str, Any], culture: Any) -> None:
    ref = data["ref"].search(data["queries"], k=1, culture=culture)
    got = built.search(data["queries"], k=1, culture=culture)
    assert [r[0][0] for r in got] == [r[0][0] for r in ref]
    np.testing.assert_allclose([r[0][1] for r in got], [r[0][1] for r in ref], atol=1e-4)


@pytest.mark.parametrize("culture", FILTERS, ids=["one", "two", "all"])
def test_culture_filter_respected_and_sorted(built: VectorStore, data: dict[str, Any], culture: Any) -> None:
    allowed = set(CULTURES) if culture is None else ({culture} if isinstance(culture, str) else set(culture))
    results = built.search(data["queries"], k=10, culture=culture)
    assert len(results) == len(data["queries"])
    for hits in results:
        assert len(hits) == 10
        assert {data["culture_of"][i] for i, _ in hits} <= allowed
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)


def test_k_above_partition_size_and_unknown_culture(built: VectorStore, data: dict[str, Any]) -> None:
    hits = built.search(data["queries"][:2], k=PER_CULTURE + 50, culture="en")
    assert [len(h) for h in hits] == [PER_CULTURE, PER_CULTURE]
    assert built.search(data["queries"][:3], k=1, culture="xx") == [[], [], []]
    assert len(built) == PER_CULTURE * len(CULTURES)
    assert built.cultures() == sorted(CULTURES)


def test_one_dimensional_query_is_one_query(built: VectorStore, data: dict[str, Any]) -> None:
    q = data["queries"][0]
    assert built.search(q, k=1, culture="zh") == built.search(q[None, :], k=1, culture="zh")


def test_bad_inputs(built: VectorStore, data: dict[str, Any]) -> None:
    with pytest.raises(DataError, match=r"shape \(n, 32\)"):
        built.search(np.ones((2, DIM + 1), dtype=np.float32), k=1)
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        built.search(data["queries"], k=0)
    with pytest.raises(DataError, match="already in the store"):
        built.add(["item-0"], data["vecs"][:1], [{"culture": "en"}])
    with pytest.raises(DataError, match="no 'culture'"):
        built.add(["new-1"], data["vecs"][:1], [{"concept": "x"}])
    with pytest.raises(DataError, match="all zeros"):
        built.add(["new-2"], np.zeros((1, DIM), dtype=np.float32), [{"culture": "en"}])


def test_save_load_round_trip(store: VectorStore, data: dict[str, Any], tmp_path: Path) -> None:
    before = store.search(data["queries"], k=3, culture=["zh", "ar"])
    store.save(tmp_path / "saved")
    store.close()
    loaded = load_store(tmp_path / "saved")
    try:
        assert loaded.backend == store.backend and loaded.dim == DIM and len(loaded) == len(data["ids"])
        after = loaded.search(data["queries"], k=3, culture=["zh", "ar"])
        assert [[i for i, _ in h] for h in after] == [[i for i, _ in h] for h in before]
        with pytest.raises(ConfigError, match="read-only"):
            loaded.add(["new"], data["vecs"][:1], [{"culture": "en"}])
    finally:
        loaded.close()


def _main_file(saved: Path) -> Path:
    candidates = [p for p in saved.rglob("*") if p.is_file() and p.suffix in (".npy", ".faiss", ".sqlite")]
    return max(candidates, key=lambda p: p.stat().st_size)


def test_corrupted_file_is_refused(store: VectorStore, tmp_path: Path) -> None:
    store.save(tmp_path / "saved")
    store.close()
    for damage in ("truncate", "flip"):
        copy = tmp_path / damage
        shutil.copytree(tmp_path / "saved", copy)
        target = _main_file(copy)
        raw = target.read_bytes()
        if damage == "truncate":
            target.write_bytes(raw[: len(raw) // 2])
        else:
            mid = len(raw) // 2
            target.write_bytes(raw[:mid] + bytes(b ^ 0xFF for b in raw[mid : mid + 64]) + raw[mid + 64 :])
        with pytest.raises(IndexError_, match="rebuild"):
            load_store(copy)


def test_garbage_store_meta_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "store.json").write_text('{"format": 1, "backe')
    with pytest.raises(IndexError_, match="(not valid|invalid) JSON"):
        load_store(tmp_path / "s")
    with pytest.raises(IndexError_, match="missing"):
        load_store(tmp_path / "nothing-here")


def test_faiss_unverified_garbage_still_raises_index_error(data: dict[str, Any], tmp_path: Path) -> None:
    s = make_store("faiss:flat", DIM)
    s.add(data["ids"], data["vecs"], data["payloads"])
    s.save(tmp_path / "f")
    target = tmp_path / "f" / "part-0000.faiss"
    target.write_bytes(b"garbage!" * (target.stat().st_size // 8) + b"x" * (target.stat().st_size % 8))
    with pytest.raises(IndexError_, match="corrupted"):
        load_store(tmp_path / "f", verify=False)


def test_faiss_kinds_chosen_by_size_and_mmap_load(data: dict[str, Any], tmp_path: Path) -> None:
    s = make_store("faiss", DIM, flat_max=60)
    assert isinstance(s, FaissStore)
    s.add(data["ids"][:150], data["vecs"][:150], data["payloads"][:150])  # 50 per culture -> flat
    s.add(data["ids"][150:], data["vecs"][150:], data["payloads"][150:])
    assert set(s.part_kinds().values()) == {"flat"}  # the kind is fixed by each culture's first add
    ivf = make_store("faiss", DIM, flat_max=60)
    assert isinstance(ivf, FaissStore)
    ivf.add(data["ids"], data["vecs"], data["payloads"])
    assert set(ivf.part_kinds().values()) == {"ivf"}
    hnsw = make_store("faiss", DIM, flat_max=60, approx="hnsw")
    assert isinstance(hnsw, FaissStore)
    hnsw.add(data["ids"], data["vecs"], data["payloads"])
    assert set(hnsw.part_kinds().values()) == {"hnsw"}
    for name, st in (("hnsw", hnsw), ("ivf", ivf)):
        st.save(tmp_path / name)
        mm = load_store(tmp_path / name, mmap=True)
        assert mm.search(data["queries"], k=1) == st.search(data["queries"], k=1)
    with pytest.raises(ConfigError, match="unknown FAISS index kind"):
        make_store("faiss:lsh", DIM)


def test_qdrant_alias_switches_between_versions(data: dict[str, Any], tmp_path: Path) -> None:
    from culturekb.retrieval.stores.qdrant_store import QdrantStore

    path = tmp_path / "q"
    first = QdrantStore(dim=DIM, path=path, collection="kb-v1", alias="kb")
    first.add(data["ids"][:30], data["vecs"][:30], data["payloads"][:30])
    first.publish()
    first.close()
    second = QdrantStore(dim=DIM, path=path, collection="kb-v2", alias="kb")
    second.add(data["ids"][30:60], data["vecs"][30:60], data["payloads"][30:60])
    second.publish()
    aliases = {a.alias_name: a.collection_name for a in second.client.get_aliases().aliases}
    assert aliases == {"kb": "kb-v2"}
    assert second.client.collection_exists("kb-v1")  # kept for rollback
    second.close()
    third = QdrantStore(dim=DIM, path=path, collection="kb-v3", alias="kb", drop_previous=True)
    third.add(data["ids"][60:90], data["vecs"][60:90], data["payloads"][60:90])
    third.publish()
    assert not third.client.collection_exists("kb-v2")
    assert {a.alias_name: a.collection_name for a in third.client.get_aliases().aliases} == {"kb": "kb-v3"}
    third.close()


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_qdrant_server_down_fails_fast_and_clearly(data: dict[str, Any]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    s = make_store("qdrant", DIM, url=url, timeout=2)
    with pytest.raises(StoreUnavailableError) as info:  # connection refused: no retry loop (no clock asserted)
        s.add(data["ids"][:3], data["vecs"][:3], data["payloads"][:3])
    assert isinstance(info.value, ProviderError) and isinstance(info.value, IndexError_)
    assert url in str(info.value) and "--backend faiss" in str(info.value)
    with pytest.raises(ConfigError, match="one of location=, path=, url="):
        make_store("qdrant", DIM, url=url, path="x")
