"""Exact-then-semantic lookup with the real default embedder on a small KB built in code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from culturekb.errors import ConfigError, DataError, IndexError_
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval import DEFAULT_TAU, MAX_QUERY_CHARS, Retriever, build_index
from culturekb.retrieval.retriever import colour_conflict

CONCEPTS = {
    "zh": ["bamboo", "full moon", "crane", "red lantern", "white rose", "dragon", "tea"],
    "en": ["full moon", "sunflower", "dress", "ocean", "church"],
    "ar": ["crescent moon", "desert", "mosque", "camel", "palm tree"],
}


def tup(concept: str, culture: str, support: int = 3) -> KnowledgeTuple:
    return KnowledgeTuple(
        concept=concept, culture=culture, label="contentment", distribution={"contentment": 0.6, "awe": 0.4},
        support=support, rationales=[f"For {culture} viewers, {concept} brings calm."],
    )


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase([tup(c, cu) for cu, cs in CONCEPTS.items() for c in cs])


@pytest.fixture(scope="module")
def retriever(kb: KnowledgeBase, default_embedder: Any) -> Retriever:
    return Retriever(kb, build_index(kb, default_embedder, "faiss", persist=False), default_embedder)


class Counting:
    """Wraps the retriever's embedder and store to count encode and search calls."""

    def __init__(self, r: Retriever, monkeypatch: pytest.MonkeyPatch) -> None:
        self.encoded: list[list[str]] = []
        self.searches = 0
        enc, search = r.embedder.encode, r.index.store.search

        def encode(texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
            self.encoded.append(list(texts))
            return enc(texts, batch_size=batch_size)

        def counted_search(*a: Any, **kw: Any) -> Any:
            self.searches += 1
            return search(*a, **kw)

        monkeypatch.setattr(r.embedder, "encode", encode)
        monkeypatch.setattr(r.index.store, "search", counted_search)


def test_default_tau_is_the_calibrated_one() -> None:
    assert DEFAULT_TAU == 0.70


def test_exact_match_comes_first_after_normalisation(retriever: Retriever) -> None:
    m = retriever.lookup(["The Full Moons", "bamboo"], "zh")
    assert [x.kind if x else None for x in m] == ["exact", "exact"]
    assert m[0] is not None and m[0].tuple.id == "zh::full moon" and m[0].score == 1.0
    assert m[0].query == "The Full Moons"


def test_bamboo_grove_finds_bamboo(retriever: Retriever) -> None:
    (m,) = retriever.lookup(["bamboo grove"], "zh")
    assert m is not None and m.kind == "semantic" and m.tuple.id == "zh::bamboo"
    assert DEFAULT_TAU <= m.score < 1.0


def test_near_miss_below_tau_is_none(retriever: Retriever) -> None:
    assert retriever.lookup(["full house", "sunflower"], "zh") == [None, None]
    (low,) = retriever.lookup(["full house"], "zh", tau=0.3)  # a lower tau admits it: the threshold decides
    assert low is not None and low.tuple.id == "zh::full moon"


def test_never_another_cultures_tuple(retriever: Retriever) -> None:
    queries = ["sunflower", "ocean", "church", "dress", "desert", "camel", "palm tree", "mosque"]
    for culture in CONCEPTS:
        for m in retriever.lookup(queries, culture, tau=-1.0):  # tau -1 -> every query matches something
            assert m is not None and m.tuple.culture == culture


def test_cross_culture_searches_only_other_cultures(retriever: Retriever) -> None:
    m = retriever.lookup(["full moon", "sunflower", "desert", "bamboo"], "zh", cross_culture=True)
    assert m[0] is not None and m[0].kind == "exact" and m[0].culture in ("en",)  # zh's own is excluded
    assert m[1] is not None and m[1].tuple.id == "en::sunflower"
    assert m[2] is not None and m[2].tuple.id == "ar::desert"
    assert m[3] is None or m[3].culture != "zh"
    only_ar = retriever.lookup(["full moon", "sunflower"], "zh", cross_culture="ar", tau=-1.0)
    assert all(x is not None and x.culture == "ar" for x in only_ar)


def test_one_encode_and_one_search_per_batch(retriever: Retriever, monkeypatch: pytest.MonkeyPatch) -> None:
    c = Counting(retriever, monkeypatch)
    queries = ["bamboo", "bamboo grove", "Bamboo Groves", "full moon", "lanterns", "night sky", "tea cup"]
    out = retriever.lookup(queries, "zh")
    assert len(out) == len(queries)
    assert c.searches == 1 and len(c.encoded) == 1
    assert sorted(c.encoded[0]) == ["bamboo grove", "lantern", "night sky", "tea cup"]  # exact ones not encoded
    retriever.lookup(["bamboo", "tea"], "zh")  # all exact: nothing to encode or search
    assert c.searches == 1 and len(c.encoded) == 1


def test_lookup_many_encodes_once_and_searches_once_per_culture(
    retriever: Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = Counting(retriever, monkeypatch)
    out = retriever.lookup_many([(["bamboo grove", "moon"], "zh"), (["sand dunes", "moon"], "ar"), (["moon"], "zh")])
    assert len(c.encoded) == 1 and c.searches == 2
    assert [len(r) for r in out] == [2, 2, 1]
    assert all(m is None or m.culture == cu for r, cu in zip(out, ["zh", "ar", "zh"], strict=True) for m in r)


def test_empty_concept_error_names_its_index(retriever: Retriever) -> None:
    with pytest.raises(DataError, match="index 1 is empty or whitespace"):
        retriever.lookup(["bamboo", "   "], "zh")
    with pytest.raises(DataError, match="index 0 .*no content words"):
        retriever.lookup(["the"], "zh")
    with pytest.raises(DataError, match="index 0 is a int"):
        retriever.lookup([3], "zh")  # type: ignore[list-item]
    assert retriever.lookup(["", "bamboo"], "zh", on_invalid="skip")[0] is None
    with pytest.raises(ConfigError, match="list of strings"):
        retriever.lookup("bamboo", "zh")


def test_unknown_culture_lists_the_kbs_cultures(retriever: Retriever) -> None:
    with pytest.raises(ConfigError, match="'klingon' is not in this KB; its cultures are: ar, en, zh"):
        retriever.lookup(["bamboo"], "klingon")
    with pytest.raises(ConfigError, match="'ja' is not in this KB"):
        retriever.lookup(["bamboo"], "ja")
    (m,) = retriever.lookup(["bamboo"], "Chinese")  # aliases resolve
    assert m is not None and m.culture == "zh"


def test_long_strings_are_cut_before_encoding(retriever: Retriever, monkeypatch: pytest.MonkeyPatch) -> None:
    c = Counting(retriever, monkeypatch)
    out = retriever.lookup(["bamboo grove " * 5000], "zh")
    assert len(out) == 1
    assert len(c.encoded[0]) == 1 and len(c.encoded[0][0]) <= MAX_QUERY_CHARS


def test_alternatives_with_k_and_bad_arguments(retriever: Retriever) -> None:
    (m,) = retriever.lookup(["bamboo grove"], "zh", k=3, tau=-1.0)
    assert m is not None and len(m.alternatives) == 2 and all(a.culture == "zh" for a in m.alternatives)
    assert m.tuple.id not in {a.tuple.id for a in m.alternatives}
    (e,) = retriever.lookup(["bamboo"], "zh", k=2, tau=-1.0)
    assert e is not None and e.kind == "exact" and len(e.alternatives) == 1
    assert e.alternatives[0].tuple.id != "zh::bamboo"
    with pytest.raises(ConfigError, match="tau must be"):
        retriever.lookup(["bamboo"], "zh", tau=2.0)
    with pytest.raises(ConfigError, match="k must be"):
        retriever.lookup(["bamboo"], "zh", k=0)


def test_colour_guard(kb: KnowledgeBase, retriever: Retriever, default_embedder: Any) -> None:
    assert colour_conflict("red flower", "white flower") and not colour_conflict("red flower", "flower")
    assert not colour_conflict("grey sky", "gray sky")
    (m,) = retriever.lookup(["red rose"], "zh")
    assert m is None or m.tuple.concept != "white rose"
    unguarded = Retriever(kb, retriever.index, default_embedder, colour_guard=False)
    (u,) = unguarded.lookup(["red rose"], "zh")
    assert u is not None and u.tuple.concept == "white rose"


def test_index_for_another_kb_is_refused(kb: KnowledgeBase, retriever: Retriever, default_embedder: Any) -> None:
    other = kb.replace(list(kb.tuples)[:-1])
    with pytest.raises(IndexError_, match="KB version"):
        Retriever(other, retriever.index, default_embedder)


def test_to_encode_names_what_lookup_would_embed_and_given_vectors_are_not_embedded_again(
    retriever: Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = ["bamboo", "bamboo grove", "Bamboo Groves", "full moon", "lanterns", "night sky", "tea cup"]
    texts = retriever.to_encode([(queries, "zh")])
    assert sorted(texts) == ["bamboo grove", "lantern", "night sky", "tea cup"]  # the exact ones are not there
    assert retriever.to_encode([(["bamboo"], "zh")]) == []
    assert retriever.to_encode([(["bamboo"], "zh")], k=3) == ["bamboo"]  # alternatives: every concept is searched
    plain = retriever.lookup(queries, "zh", k=2)
    given = dict(zip(texts, retriever.embedder.encode(texts), strict=True))
    c = Counting(retriever, monkeypatch)
    out = retriever.lookup(queries, "zh", k=2, vectors={t: given[t] for t in texts[:2]})
    assert c.encoded == [[t for t in retriever.to_encode([(queries, "zh")], k=2) if t not in texts[:2]]]
    assert [(m.tuple.id, m.kind, round(m.score, 5)) if m else None for m in out] == \
        [(m.tuple.id, m.kind, round(m.score, 5)) if m else None for m in plain]
    retriever.lookup(queries, "zh", vectors=given)  # everything given: nothing is embedded
    assert len(c.encoded) == 1
