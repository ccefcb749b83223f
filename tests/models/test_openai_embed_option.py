"""Embeddings from an OpenAI-compatible server as a build/serve option (issue 25 item 5): an index built with
`openai-embed:MODEL` records its spec, and a retriever reopened from the KB alone talks to the server named by
OPENAI_BASE_URL over real HTTP (the scripted server), without warming a remote model."""

from __future__ import annotations

import numpy as np

from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.models import make_embedder
from culturekb.models.embedding_cache import warm_up
from culturekb.testing import hash_embedding


def test_index_and_serve_with_an_embeddings_server(openai_server, tmp_path, monkeypatch) -> None:
    from culturekb.retrieval import build_index, open_retriever

    server = openai_server(embed_dim=16)
    kb_dir = tmp_path / "kb"
    tuples = [KnowledgeTuple(concept=c, culture="en", label="awe", distribution={"awe": 1.0}, support=3,
                             rationales=[f"{c} moves people"]) for c in ("full moon", "red lantern", "bamboo")]
    KnowledgeBase(tuples).save(kb_dir)
    build_index(KnowledgeBase.load(kb_dir), make_embedder("openai-embed:emb", base_url=server.base_url), "numpy",
                embedder_spec="openai-embed:emb")
    built_calls = server.embedding_calls
    assert built_calls >= 1

    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "cache"))
    retriever = open_retriever(kb_dir)
    assert retriever.embedder.id == "openai-embed:emb" and retriever.embedder.dim == 16
    assert warm_up(retriever.embedder) is False and server.embedding_calls == built_calls  # nothing sent
    vector = retriever.embedder.encode(["a paper lantern"])
    np.testing.assert_allclose(vector[0], hash_embedding("a paper lantern", 16), atol=1e-6)
    assert server.embedding_calls > built_calls  # the query (and the client's dimension probe) went over HTTP
    hit = retriever.lookup(["Full Moon"], "en")[0]
    assert hit is not None and hit.concept == "full moon"  # exact hits need no server
