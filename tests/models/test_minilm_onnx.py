"""The ONNX Runtime MiniLM: equal to sentence-transformers, the default when installed, its graph written by hand."""

from __future__ import annotations

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.models import MiniLMEmbedder, SentenceTransformerEmbedder, make_embedder
from culturekb.models import threads as thread_policy
from culturekb.models.minilm_onnx import _varint
from tests.models.test_minilm_numpy import _real_concepts

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def onnx_minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(memo_size=0, runtime="onnx")


def test_onnx_runtime_equals_sentence_transformers(onnx_minilm: MiniLMEmbedder, default_embedder) -> None:
    texts = _real_concepts()
    assert len(texts) >= 300 and sum(1 for t in texts if not t.isascii()) >= 50
    long = "la luna llena sobre el río " * 40  # truncated at 256 tokens
    texts += ["", "A RED Lantern!!", long]
    ours = onnx_minilm.encode(texts)
    st = SentenceTransformerEmbedder(memo_size=0)
    ref = st.encode(texts, batch_size=64)
    assert ours.shape == ref.shape == (len(texts), 384) and ours.dtype == np.float32
    cosines = np.sum(ours * ref, axis=1)
    assert float(cosines.min()) >= 1 - 1e-4, texts[int(cosines.argmin())]
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # neither the batch a text lands in nor the token budget of a batch changes its vector (padding is masked)
    alone = onnx_minilm.encode([texts[7]])[0]
    assert float(alone @ ours[7]) >= 1 - 1e-6
    model = onnx_minilm._model()
    before = model.tokens_per_batch
    try:
        model.tokens_per_batch = 8  # one text per batch for most texts
        small = onnx_minilm.encode(texts[:40])
    finally:
        model.tokens_per_batch = before
    assert float(np.sum(small * ours[:40], axis=1).min()) >= 1 - 1e-6


def test_default_minilm_is_onnx_when_installed(onnx_minilm: MiniLMEmbedder) -> None:
    emb = make_embedder("minilm")
    assert emb.runtime == "onnx" and emb.id == "st:all-MiniLM-L6-v2" and emb.spec == "minilm"  # type: ignore[attr-defined]
    assert make_embedder("minilm:onnx").runtime == "onnx"  # type: ignore[attr-defined]
    assert not emb.parallel_batches  # type: ignore[attr-defined]  # one batch already uses every core
    one = MiniLMEmbedder(memo_size=0, runtime="onnx", threads=1)
    assert one._model().threads == 1
    with pytest.raises(ConfigError, match="threads"):
        MiniLMEmbedder(runtime="onnx", threads=0)
    with pytest.raises(ConfigError, match="'auto', 'onnx' or 'numpy'"):
        MiniLMEmbedder(runtime="tflite")


def test_varint_encodes_protobuf_int64() -> None:
    assert _varint(0) == b"\x00" and _varint(1) == b"\x01" and _varint(300) == b"\xac\x02"
    assert _varint(-1) == b"\xff" * 9 + b"\x01"  # negative int64: ten bytes, two's complement


def test_thread_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(thread_policy.THREADS_ENV, raising=False)
    monkeypatch.delenv(thread_policy.PROCESSES_ENV, raising=False)
    cores = thread_policy.available_cores()
    monkeypatch.setattr(thread_policy.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert thread_policy.compute_threads() == cores  # a free machine: every core
    monkeypatch.setattr(thread_policy.os, "getloadavg", lambda: (cores + 3.0, 0.0, 0.0))
    assert thread_policy.compute_threads() == 1  # a busy one: no oversubscription
    monkeypatch.setattr(thread_policy.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setenv(thread_policy.PROCESSES_ENV, str(cores * 2))
    assert thread_policy.compute_threads() == 1  # never below one
    monkeypatch.setenv(thread_policy.THREADS_ENV, "3")
    assert thread_policy.compute_threads() == 3  # the override wins
    monkeypatch.setenv(thread_policy.THREADS_ENV, "many")
    with pytest.raises(ConfigError, match="CULTUREKB_THREADS='many'"):
        thread_policy.compute_threads()


def test_thread_policy_does_not_count_its_own_process_as_another_job(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.delenv(thread_policy.THREADS_ENV, raising=False)
    monkeypatch.delenv(thread_policy.PROCESSES_ENV, raising=False)
    monkeypatch.setattr(thread_policy, "available_cores", lambda: 2)
    monkeypatch.setattr(thread_policy.os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    monkeypatch.setattr(thread_policy, "own_load", lambda: 0.0)
    assert thread_policy.compute_threads() == 1  # 1.6 of 2 cores busy with other jobs: one thread
    monkeypatch.setattr(thread_policy, "own_load", lambda: 1.2)
    assert thread_policy.compute_threads() == 2  # most of that load is this process's own work: both cores
    monkeypatch.undo()
    stop = time.process_time() + 0.3
    while time.process_time() < stop:  # this process computes: it has a part of the load average
        pass
    assert 0.0 < thread_policy.own_load() <= thread_policy.available_cores() + 0.5


def test_faiss_threads_single_queries_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    faiss = pytest.importorskip("faiss")
    monkeypatch.setenv(thread_policy.THREADS_ENV, "2")
    before = faiss.omp_get_max_threads()
    with thread_policy.faiss_threads(faiss, 1):
        assert faiss.omp_get_max_threads() == 1
    with thread_policy.faiss_threads(faiss, thread_policy.FAISS_PARALLEL_MIN):
        assert faiss.omp_get_max_threads() == 2
    assert faiss.omp_get_max_threads() == before


def test_graph_is_written_once_into_the_cache_folder(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from culturekb.models import minilm_onnx
    from culturekb.models.embedders import default_minilm_path

    path = default_minilm_path().resolve()
    first = minilm_onnx.OnnxBert(path, 1, cache_dir=tmp_path)
    saved = minilm_onnx.graph_file(path, tmp_path)
    assert first.graph_path == saved and saved is not None and saved.is_file()
    assert saved.parent == tmp_path / "onnx" and not list(saved.parent.glob("*.tmp"))

    def no_build(weights):  # noqa: ANN001, ANN202
        raise AssertionError("the saved graph must be used, not written again")

    monkeypatch.setattr(minilm_onnx, "bert_graph", no_build)
    second = minilm_onnx.OnnxBert(path, 1, cache_dir=tmp_path)
    texts = ["full moon", "红灯笼", "a dragon boat race on the river"]
    np.testing.assert_array_equal(first.encode(texts), second.encode(texts))
    saved.write_bytes(b"not a graph")
    with pytest.raises(ConfigError, match="delete that file"):
        minilm_onnx.OnnxBert(path, 1, cache_dir=tmp_path)
