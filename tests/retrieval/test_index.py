"""KB index: vectors computed once, stored with the index, and refused for another KB or embedder."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from culturekb.errors import ConfigError, DataError, IndexError_
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval import build_index, load_index


class HashEmbedder:
    """Deterministic pseudo-embeddings from a text hash; counts its calls."""

    def __init__(self, id_: str = "test:hash", dim: int = 16) -> None:
        self.id = id_
        self.dim = dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)


def tup(concept: str, culture: str, label: str = "contentment") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 1.0}, support=2)


def make_kb(extra: str | None = None) -> KnowledgeBase:
    tuples = [tup("moon", c) for c in ("en", "zh", "ar")]
    tuples += [tup("bamboo", "zh"), tup("desert", "ar"), tup("dress", "en")]
    if extra:
        tuples.append(tup(extra, "en"))
    return KnowledgeBase(tuples)


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    k = make_kb()
    k.save(tmp_path / "kb")
    return k


def test_build_encodes_each_concept_once_and_saves_everything(kb: KnowledgeBase) -> None:
    emb = HashEmbedder()
    index = build_index(kb, emb, "faiss")
    assert len(emb.calls) == 1 and sorted(emb.calls[0]) == ["bamboo", "desert", "dress", "moon"]
    folder = Path(kb.path or "") / "index" / "faiss"
    assert index.directory == folder
    assert {p.name for p in folder.iterdir()} == {"index.json", "vectors.npy", "store"}
    meta = json.loads((folder / "index.json").read_text())
    assert meta["kb_version"] == kb.version and meta["embedder"] == "test:hash" and meta["dim"] == 16
    assert meta["backend"] == "faiss" and meta["count"] == 6 and meta["ids"] == [t.id for t in kb.tuples]
    assert isinstance(index.vectors, np.memmap)  # mmap=True by default
    for row, t in enumerate(kb.tuples):
        np.testing.assert_allclose(index.vectors[row], HashEmbedder().encode([t.concept])[0], atol=1e-6)
    hits = index.store.search(HashEmbedder().encode(["bamboo"]), k=1, culture="zh")
    assert hits[0][0][0] == "zh::bamboo"


def test_second_backend_reuses_the_vectors(kb: KnowledgeBase) -> None:
    emb = HashEmbedder()
    build_index(kb, emb, "faiss")
    build_index(kb, emb, "numpy")
    assert len(emb.calls) == 1
    loaded = load_index(kb, emb, "numpy")
    assert loaded.meta.backend == "numpy" and len(loaded.store) == 6


def test_qdrant_local_index_round_trip(kb: KnowledgeBase) -> None:
    emb = HashEmbedder()
    index = build_index(kb, emb, "qdrant")
    q = emb.encode(["desert"])
    assert index.store.search(q, k=1, culture="ar")[0][0][0] == "ar::desert"
    index.close()
    for _ in range(2):  # opening and querying must not change the files their checksums cover
        again = load_index(kb, emb, "qdrant")
        hits = again.store.search(q, k=2, culture=["en", "zh"])[0]
        assert [c.split("::")[0] in ("en", "zh") for c, _ in hits] == [True, True]
        again.close()


def test_other_embedder_is_refused(kb: KnowledgeBase) -> None:
    build_index(kb, HashEmbedder(), "faiss")
    with pytest.raises(IndexError_) as info:
        load_index(kb, HashEmbedder("test:other"), "faiss")
    msg = str(info.value)
    assert "'test:hash'" in msg and "'test:other'" in msg and "culturekb index --kb" in msg


def test_other_kb_version_is_refused(kb: KnowledgeBase) -> None:
    build_index(kb, HashEmbedder(), "faiss")
    edited = make_kb(extra="sunflower")
    edited.path = kb.path
    with pytest.raises(IndexError_) as info:
        load_index(edited, HashEmbedder(), "faiss")
    msg = str(info.value)
    assert kb.version in msg and edited.version in msg and "culturekb index --kb" in msg


def test_truncated_vectors_file_is_refused(kb: KnowledgeBase) -> None:
    build_index(kb, HashEmbedder(), "faiss")
    vectors = Path(kb.path or "") / "index" / "faiss" / "vectors.npy"
    raw = vectors.read_bytes()
    vectors.write_bytes(raw[: len(raw) - 40])
    with pytest.raises(IndexError_, match="truncated"):
        load_index(kb, HashEmbedder(), "faiss")
    with pytest.raises(IndexError_, match="truncated"):
        load_index(kb, HashEmbedder(), "faiss", verify=False)  # sizes are always checked


def test_altered_vectors_and_broken_meta_are_refused(kb: KnowledgeBase) -> None:
    build_index(kb, HashEmbedder(), "faiss")
    folder = Path(kb.path or "") / "index" / "faiss"
    raw = bytearray((folder / "vectors.npy").read_bytes())
    raw[-8:] = b"\x00" * 8
    (folder / "vectors.npy").write_bytes(bytes(raw))
    with pytest.raises(IndexError_, match="SHA-256"):
        load_index(kb, HashEmbedder(), "faiss")
    (folder / "index.json").write_text((folder / "index.json").read_text()[:50])
    with pytest.raises(IndexError_, match="(not valid|invalid) JSON"):
        load_index(kb, HashEmbedder(), "faiss")


def test_missing_index_and_wrong_backend(kb: KnowledgeBase) -> None:
    with pytest.raises(IndexError_, match=r"no faiss index .*`culturekb index --kb"):
        load_index(kb, HashEmbedder(), "faiss")
    build_index(kb, HashEmbedder(), "numpy")
    folder = Path(kb.path or "") / "index" / "numpy"
    with pytest.raises(IndexError_, match="holds a 'numpy' index"):
        load_index(kb, HashEmbedder(), "faiss", directory=folder)


def test_in_memory_index_and_unsaved_kb() -> None:
    kb = make_kb()
    with pytest.raises(ConfigError, match="save it first"):
        build_index(kb, HashEmbedder(), "faiss")
    index = build_index(kb, HashEmbedder(), "faiss", persist=False)
    assert index.directory is None and index.vectors.shape == (6, 16)
    with pytest.raises(DataError, match="no tuples"):
        build_index(KnowledgeBase([]), HashEmbedder(), "faiss", persist=False)


def test_broken_embedder_output_is_refused(tmp_path: Path) -> None:
    class Broken(HashEmbedder):
        def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
            return np.zeros((len(texts), self.dim + 1), dtype=np.float32)

    with pytest.raises(DataError, match="expected"):
        build_index(make_kb(), Broken(), "numpy", persist=False)


def test_open_retriever_builds_once_then_loads(kb: KnowledgeBase) -> None:
    from culturekb.retrieval import open_retriever

    emb = HashEmbedder()
    first = open_retriever(kb, emb)  # type: ignore[arg-type]
    assert first.index.directory is not None and len(emb.calls) == 1
    second = open_retriever(kb, emb)  # type: ignore[arg-type]
    assert len(emb.calls) == 1  # loaded, not rebuilt
    assert second.lookup(["moon"], "ar")[0] is not None
    with pytest.raises(IndexError_, match="test:other"):
        open_retriever(kb, HashEmbedder("test:other"))  # type: ignore[arg-type]
