"""The numpy MiniLM runtime: equal to sentence-transformers, no torch on the lookup path, lazy on exact hits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.models import MiniLMEmbedder, SentenceTransformerEmbedder, make_embedder
from culturekb.models.embedding_cache import CachedEmbedder, LazyEmbedder


def _real_concepts() -> list[str]:
    """Query and KB concept strings of the packaged evaluation pairs (English, zh, ar, hi, ja, es, sw ...)."""
    texts: list[str] = []
    for name in ("tau_pairs.jsonl", "cross_language_pairs.jsonl"):
        for line in resources.files("culturekb.data").joinpath(name).read_text("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts += [row["query"], row["concept"]]
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="module")
def numpy_minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(memo_size=0, runtime="numpy")


def test_numpy_runtime_equals_sentence_transformers(numpy_minilm: MiniLMEmbedder, default_embedder) -> None:
    texts = _real_concepts()
    assert len(texts) >= 300
    assert sum(1 for t in texts if not t.isascii()) >= 50  # multilingual strings, not only English
    texts += ["", "A RED Lantern!!"]  # empty, case
    long = "la luna llena sobre el río " * 40  # truncated at 256 tokens; alone in its batch (padding is costly)
    ours = np.vstack([numpy_minilm.encode(texts, batch_size=64), numpy_minilm.encode([long], batch_size=1)])
    st = SentenceTransformerEmbedder(memo_size=0)
    ref = np.vstack([st.encode(texts, batch_size=64), st.encode([long], batch_size=1)])
    texts.append(long)
    assert ours.shape == ref.shape == (len(texts), 384) and ours.dtype == np.float32
    cosines = np.sum(ours * ref, axis=1)
    assert float(cosines.min()) >= 1 - 1e-4, texts[int(cosines.argmin())]
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # batch composition and size do not change a text's vector (padding is masked)
    alone = numpy_minilm.encode([texts[7]], batch_size=1)[0]
    assert float(alone @ ours[7]) >= 1 - 1e-6


def test_same_identity_as_sentence_transformers(numpy_minilm: MiniLMEmbedder, default_embedder) -> None:
    assert (numpy_minilm.id, numpy_minilm.spec, numpy_minilm.dim) == (default_embedder.id, "minilm", 384)


def test_minilm_spec_chooses_the_runtime(default_embedder) -> None:
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)
    assert make_embedder("minilm:numpy").runtime == "numpy"  # type: ignore[attr-defined]
    st = make_embedder("minilm:st")
    assert isinstance(st, SentenceTransformerEmbedder) and st.id == "st:all-MiniLM-L6-v2"
    assert st._model is default_embedder._model  # one model per process, shared by every embedder of it
    with pytest.raises(ConfigError, match="minilm:st"):
        make_embedder("minilm:tflite")


def test_numpy_runtime_refuses_other_architectures(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_size": 8}))
    (tmp_path / "modules.json").write_text("[]")
    from culturekb.models.minilm_numpy import NumpyBert

    with pytest.raises(ConfigError, match="sentence-transformers runtime"):
        NumpyBert(tmp_path)


# -- the lookup path -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_kb(tmp_path_factory: pytest.TempPathFactory, numpy_minilm: MiniLMEmbedder) -> Path:
    from culturekb.retrieval import build_index

    def tup(concept: str) -> KnowledgeTuple:
        return KnowledgeTuple(concept=concept, culture="en", label="awe", distribution={"awe": 1.0}, support=3,
                              rationales=[f"{concept} moves people"])

    kb_dir = tmp_path_factory.mktemp("minilm_kb") / "kb"
    KnowledgeBase([tup(c) for c in ("dog", "full moon", "bamboo", "red lantern")]).save(kb_dir)
    build_index(KnowledgeBase.load(kb_dir), numpy_minilm, "numpy", embedder_spec="minilm")
    return kb_dir


_PROBE = """
import json, sys
from culturekb.cli import app
app(sys.argv[1:], standalone_mode=False)
from culturekb.models.minilm_numpy import loaded_models
from culturekb.models.minilm_onnx import loaded_onnx_models
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
print(json.dumps({"heavy": heavy, "loaded": len(loaded_models() | loaded_onnx_models())}))
"""


def _cli_lookup(kb_dir: Path, cache_dir: Path, *queries: str) -> tuple[list[dict], dict]:
    env = {**os.environ, "CULTUREKB_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, "lookup", *queries, "--culture", "en", "--kb", str(kb_dir),
                           "--json"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    *rows, probe = proc.stdout.strip().splitlines()
    return json.loads("\n".join(rows)), json.loads(probe)


def test_cli_lookup_imports_no_torch_and_loads_lazily(minilm_kb: Path, tmp_path: Path) -> None:
    rows, probe = _cli_lookup(minilm_kb, tmp_path / "cache", "dog", "full moon")  # exact hits only
    assert [r["match"]["kind"] for r in rows] == ["exact", "exact"]
    assert probe == {"heavy": [], "loaded": 0}  # no model read at all
    rows, probe = _cli_lookup(minilm_kb, tmp_path / "cache", "puppy")  # semantic: the numpy runtime, no torch
    assert rows[0]["match"]["concept"] == "dog" and rows[0]["match"]["kind"] == "semantic"
    assert probe == {"heavy": [], "loaded": 1}
    rows, probe = _cli_lookup(minilm_kb, tmp_path / "cache", "puppy")  # the query vector comes from the disk cache
    assert rows[0]["match"]["concept"] == "dog" and probe == {"heavy": [], "loaded": 0}


def test_open_retriever_is_lazy_and_caches_queries(minilm_kb: Path, tmp_path: Path) -> None:
    from culturekb.config import Settings
    from culturekb.retrieval import open_retriever

    settings = Settings(cache_dir=tmp_path / "cache")
    retriever = open_retriever(minilm_kb, settings=settings)
    emb = retriever.embedder
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, LazyEmbedder)
    assert emb.id == "st:all-MiniLM-L6-v2" and emb.dim == 384
    assert retriever.lookup(["dog", "bamboo"], "en")[0] is not None
    assert not emb.inner.loaded  # exact hits never call the encoder
    assert emb.hits == emb.misses == 0
    match = retriever.lookup(["a bright full moon"], "en")[0]
    assert match is not None and match.concept == "full moon" and emb.inner.loaded and emb.misses == 1
    again = open_retriever(minilm_kb, settings=settings)
    assert again.lookup(["a bright full moon"], "en")[0] == match
    assert again.embedder.hits == 1 and not again.embedder.inner.loaded  # type: ignore[attr-defined]


def test_lazy_embedder_refuses_a_model_other_than_the_index(numpy_minilm: MiniLMEmbedder) -> None:
    from culturekb.errors import IndexError_

    lazy = LazyEmbedder("minilm", "st:other-model", 384, lambda spec: numpy_minilm)
    assert lazy.encode([]).shape == (0, 384) and not lazy.loaded
    with pytest.raises(IndexError_, match="st:other-model"):
        lazy.encode(["dog"])
