"""Builder speed (issue 13): each distinct text of a build is embedded once, in one pass, and its vector is kept
in the step cache for later builds; the KB is the same with or without the vector cache; a rebuild embeds
nothing."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from culturekb.builders._stepcache import CachedEmbedder, StepCache, text_key
from culturekb.builders.concepts import TextConceptExtractor
from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.errors import DataError
from culturekb.kb import get_scheme
from culturekb.workflows import demo_data_files, load_data

SCHEME = get_scheme("artemis9")


class CountingHashEmbedder:
    """Deterministic unit vectors seeded by each text's hash; records every text it is asked to embed."""

    id = "counting-hash"
    spec = "counting-hash"
    dim = 16
    batch_invariant = True  # a text's vector is its hash's: batches of many texts are safe

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        rows = []
        for t in texts:
            seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


def _components(emb: CountingHashEmbedder, max_rationales: int = 4) -> BuildComponents:
    return BuildComponents(
        extractor=TextConceptExtractor(),
        generator=ExtractiveRationaleGenerator(emb, max_rationales=max_rationales),
        judges=[LexiconJudge(SCHEME), PrototypeJudge(emb, SCHEME)],
    )


@pytest.fixture(scope="module")
def samples():
    found, _ = load_data(demo_data_files())
    return found


@pytest.fixture(scope="module")
def cold(samples, tmp_path_factory):
    """One cold build with the vector cache, small chunks (many generate calls)."""
    emb = CountingHashEmbedder()
    cache_dir = tmp_path_factory.mktemp("cold-cache")
    res = build_kb(samples, BuildConfig(chunk_size=3), cache_dir=cache_dir, components=_components(emb),
                   progress=False)
    return res, emb, cache_dir


def test_each_distinct_text_is_embedded_once_per_build(cold):
    res, emb, _ = cold
    counts = Counter(emb.texts)
    assert counts and max(counts.values()) == 1
    report = res.report["embeddings"]
    assert report["embedded"] == len(counts)
    assert report["from_vector_cache"] == 0
    # the rationale candidates go in one pass of batches of 64, not one encode call per chunk of 3 tuples
    assert emb.calls <= len(counts) // 64 + 3
    assert res.report["steps"]["rationales"]["computed"] > 10 * 3


def test_the_old_path_embeds_per_chunk_and_gives_the_same_kb(samples, cold):
    res, emb, _ = cold
    old = CountingHashEmbedder()
    plain = build_kb(samples, BuildConfig(chunk_size=3), components=_components(old), progress=False,
                     vector_cache=False)
    assert plain.kb.version == res.kb.version
    assert "embeddings" not in plain.report
    assert max(Counter(old.texts).values()) > 1  # one encode per chunk: shared explanations embedded again
    assert old.calls > emb.calls


def test_vectors_are_reused_across_builds_and_a_rebuild_embeds_nothing(samples, cold, tmp_path):
    res, emb, cache_dir = cold
    # an unchanged rebuild: every step cached, the embedder never called
    again_emb = CountingHashEmbedder()
    again = build_kb(samples, BuildConfig(chunk_size=3), cache_dir=cache_dir, components=_components(again_emb),
                     progress=False)
    assert again_emb.calls == 0 and again.report["embeddings"]["embedded"] == 0
    assert again.kb.version == res.kb.version
    assert again.report["model_calls"] == 0
    # a changed rationale step (fewer rationales) recomputes rationales and verdicts from cached vectors only
    changed_emb = CountingHashEmbedder()
    changed = build_kb(samples, BuildConfig(chunk_size=3, max_rationales=2), cache_dir=cache_dir,
                       components=_components(changed_emb, max_rationales=2), progress=False)
    assert changed.report["steps"]["rationales"]["computed"] == res.report["steps"]["rationales"]["computed"]
    assert changed_emb.calls == 0
    assert changed.report["embeddings"]["from_vector_cache"] > 0
    # the same build cold elsewhere gives the same KB as the one that read its vectors from the cache
    fresh = build_kb(samples, BuildConfig(chunk_size=3, max_rationales=2), cache_dir=tmp_path / "fresh",
                     components=_components(CountingHashEmbedder(), max_rationales=2), progress=False)
    assert fresh.kb.version == changed.kb.version


def test_the_vector_cache_is_keyed_by_embedder_id_and_text(tmp_path):
    cache = StepCache(tmp_path / "steps.sqlite")
    inner = CountingHashEmbedder()
    first = CachedEmbedder(inner, cache).encode(["b text", "a", "b text", "a"])
    assert inner.texts == ["a", "b text"]  # deduplicated, canonical order (length, then text)
    cache.close()
    reopened = StepCache(tmp_path / "steps.sqlite")
    assert reopened.count_vectors("counting-hash") == 2
    other = CountingHashEmbedder()
    again = CachedEmbedder(other, reopened).encode(["a", "b text", "c"])
    assert other.texts == ["c"]
    assert np.array_equal(again[:2], first[[1, 0]])
    other.id = "another-model"
    CachedEmbedder(other, reopened).encode(["a"])
    assert other.texts == ["c", "a"]  # a different embedder id never reads these vectors
    with pytest.raises(DataError, match="dimension"):
        reopened.get_vectors("counting-hash", [text_key("a")], dim=8)
    reopened.close()


def test_with_embedder_keeps_the_component_id():
    emb = CountingHashEmbedder()
    cache = StepCache(None)
    gen = ExtractiveRationaleGenerator(emb)
    judge = PrototypeJudge(emb, SCHEME)
    wrapped = CachedEmbedder(emb, cache)
    assert gen.with_embedder(wrapped).id == gen.id
    assert judge.with_embedder(wrapped).id == judge.id
    other = CountingHashEmbedder()
    other.id = "else"
    with pytest.raises(Exception, match="else"):
        gen.with_embedder(other)
    cache.close()



def test_default_embedder_vectors_do_not_depend_on_the_other_texts_of_the_batch(samples):
    """Batches of one token count (no padding): a text's vector is the same whichever texts were embedded with it,
    so vectors read from the cache equal the ones a cold build computes (one padded batch of these texts moved
    them by ~2e-7 on the numpy runtime when this test was written)."""
    from culturekb.builders.rationales import split_sentences
    from culturekb.config import DEFAULT_EMBEDDER
    from culturekb.models.factory import make_embedder

    texts = list(dict.fromkeys(x for s in samples for e in s.explanations for x in split_sentences(e)))[:96]
    whole = CachedEmbedder(make_embedder(DEFAULT_EMBEDDER), StepCache(None))  # fresh memos, one loaded model
    assert whole.lengths is not None  # the packaged MiniLM's tokenizer is found
    counts = dict(zip(texts, whole.lengths(texts), strict=True))
    assert all(len({counts[t] for t in b}) == 1 for b in whole._batches(texts, 64))
    all_vectors = whole.encode(texts)
    part = CachedEmbedder(make_embedder(DEFAULT_EMBEDDER), StepCache(None)).encode(texts[::3])
    assert np.array_equal(part, all_vectors[::3])


def test_a_local_embedder_without_a_known_tokenizer_embeds_one_text_per_batch():
    """Padding would make its vectors depend on their batch-mates, which depend on what a killed build cached."""

    class Padded(CountingHashEmbedder):
        batch_invariant = False

    texts = ["a", "bb", "cc", "ddd"]
    padded = CachedEmbedder(Padded(), StepCache(None))
    assert padded.lengths is None
    assert padded._batches(texts, 64) == [["a"], ["bb"], ["cc"], ["ddd"]]
    invariant = CachedEmbedder(CountingHashEmbedder(), StepCache(None))
    assert invariant._batches(texts, 2) == [["a", "bb"], ["cc", "ddd"]]


def test_batches_embedded_on_several_threads_give_the_same_vectors_and_cache(samples, tmp_path):
    """The numpy MiniLM embeds a build's batches on one thread per CPU: same vectors, same cache rows, same
    counts as one thread, the batches committed in canonical order."""
    from culturekb.builders.rationales import split_sentences
    from culturekb.config import DEFAULT_EMBEDDER
    from culturekb.models.factory import make_embedder

    texts = list(dict.fromkeys(x for s in samples for e in s.explanations for x in split_sentences(e)))[:120]
    runs = {}
    for workers in (1, 3):
        cache = StepCache(tmp_path / f"steps-{workers}.sqlite")
        emb = CachedEmbedder(make_embedder(DEFAULT_EMBEDDER), cache, batch_size=8, workers=workers)
        assert emb.workers == workers
        vectors = emb.encode(texts)
        stored = cache.get_vectors(emb.id, [text_key(t) for t in texts], emb.dim)
        runs[workers] = (vectors, stored, emb.calls, emb.encoded)
        cache.close()
    (v1, s1, c1, e1), (v3, s3, c3, e3) = runs[1], runs[3]
    assert np.array_equal(v1, v3)
    assert s1.keys() == s3.keys() and all(np.array_equal(s1[k], s3[k]) for k in s1)
    assert (c1, e1) == (c3, e3) and c1 > 1 and e1 == len(texts)


def test_embed_threads_follow_the_embedder_and_the_environment(monkeypatch):
    from culturekb.builders._stepcache import embed_workers
    from culturekb.errors import ConfigError
    from culturekb.models.embedders import MiniLMEmbedder

    monkeypatch.delenv("CULTUREKB_EMBED_THREADS", raising=False)
    assert embed_workers(CountingHashEmbedder()) == 1  # not marked parallel_batches
    assert 1 <= embed_workers(MiniLMEmbedder()) <= 4
    monkeypatch.setenv("CULTUREKB_EMBED_THREADS", "2")
    assert embed_workers(CountingHashEmbedder()) == 2
    monkeypatch.setenv("CULTUREKB_EMBED_THREADS", "two")
    with pytest.raises(ConfigError, match="CULTUREKB_EMBED_THREADS"):
        embed_workers(CountingHashEmbedder())
