"""KB statistics, divergence ranking (hand-computed JSD) and the graph view."""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.kb.graph import concept_node, concept_subgraph, culture_node, emotion_node, to_graph
from culturekb.kb.stats import divergence, jensen_shannon, kb_stats, render_stats_markdown


def tup(concept: str, culture: str, dist: dict[str, float], support: int, **kw: Any) -> KnowledgeTuple:
    label = kw.pop("label", max(dist, key=lambda k: dist[k]))
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution=dist, support=support, **kw)


@pytest.fixture
def kb() -> KnowledgeBase:
    return KnowledgeBase(
        [
            # moon: disjoint distributions -> JSD 1
            tup("moon", "en", {"contentment": 1.0}, 4, rationales=["calm night", "quiet"]),
            tup("moon", "zh", {"sadness": 1.0}, 3, rationales=["homesick"]),
            # wave: (0.5, 0.5) vs (1, 0) -> JSD 0.311278
            tup("wave", "en", {"awe": 0.5, "fear": 0.5}, 10, label="fear"),
            tup("wave", "zh", {"awe": 1.0}, 20),
            # tree: same dominant emotion -> not a divergence
            tup("tree", "en", {"contentment": 0.8, "awe": 0.2}, 2),
            tup("tree", "zh", {"contentment": 0.6, "sadness": 0.4}, 1, flagged=True, status="pending"),
            # bamboo: one culture only
            tup("bamboo", "zh", {"contentment": 1.0}, 7),
            # crow: rejected by a reviewer in zh
            tup("crow", "en", {"fear": 1.0}, 5),
            tup("crow", "zh", {"amusement": 1.0}, 5, flagged=True, status="rejected"),
        ]
    )


def test_jensen_shannon_hand_values() -> None:
    assert jensen_shannon([1, 0], [0, 1]) == pytest.approx(1.0)
    assert jensen_shannon([0.3, 0.7], [0.3, 0.7]) == pytest.approx(0.0)
    expected = 0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25)) + 0.5 * math.log2(1 / 0.75)
    assert expected == pytest.approx(0.311278, abs=1e-6)
    assert jensen_shannon([0.5, 0.5], [1, 0]) == pytest.approx(expected)
    assert jensen_shannon([2, 2], [4, 0]) == pytest.approx(expected)  # unnormalised counts are normalised


def test_kb_stats(kb: KnowledgeBase) -> None:
    st = kb_stats(kb)
    assert st["tuples"] == 9 and st["rationales"] == 3 and st["flagged"] == 2 and st["pending"] == 1
    assert st["concepts"] == 5 and st["shared_concepts"] == 4
    en, zh = st["cultures"]["en"], st["cultures"]["zh"]
    assert en["tuples"] == 4 and zh["tuples"] == 5
    assert en["support_histogram"] == {"1": 0, "2": 1, "3-4": 1, "5-9": 1, "10-19": 1, "20+": 0}
    assert zh["support_histogram"] == {"1": 1, "2": 0, "3-4": 1, "5-9": 2, "10-19": 0, "20+": 1}
    assert sum(st["support_histogram"].values()) == 9
    assert en["labels"]["contentment"] == 2 and en["labels"]["fear"] == 2 and en["labels"]["awe"] == 0
    assert list(en["labels"]) == list(kb.scheme.labels)
    assert zh["pending"] == 1 and zh["flagged"] == 2 and zh["status"] == {"accepted": 3, "pending": 1, "rejected": 1}
    assert en["mean_support"] == pytest.approx((4 + 10 + 2 + 5) / 4)


def test_divergence_ranking(kb: KnowledgeBase) -> None:
    divs = divergence(kb)
    assert [d.concept for d in divs] == ["moon", "wave"]  # tree agrees, bamboo single, crow zh rejected
    moon, wave = divs
    assert moon.jsd == pytest.approx(1.0) and moon.score == pytest.approx(1.0 * 3 / (3 + 2))
    assert wave.jsd == pytest.approx(0.311278, abs=1e-6)
    assert wave.score == pytest.approx(wave.jsd * 10 / 12)
    assert moon.labels == {"en": "contentment", "zh": "sadness"} and moon.supports == {"en": 4, "zh": 3}
    assert moon.cultures == ("en", "zh")
    assert set(moon.distributions["en"]) == set(kb.scheme.labels)
    # rejected tuples count when asked
    assert "crow" in [d.concept for d in divergence(kb, include_rejected=True)]
    assert [d.concept for d in divergence(kb, top=1)] == ["moon"]
    assert [d.concept for d in divergence(kb, min_support=4)] == ["wave"]  # moon has support 3 in zh
    # without shrinkage the score is the JSD
    assert divergence(kb, shrinkage=0)[0].score == pytest.approx(1.0)
    with pytest.raises(ConfigError):
        divergence(kb, shrinkage=-1)


def test_divergence_three_cultures_mean_pairwise() -> None:
    kb = KnowledgeBase(
        [
            tup("crane", "en", {"awe": 1.0}, 5),
            tup("crane", "zh", {"contentment": 1.0}, 5),
            tup("crane", "ar", {"awe": 1.0}, 5),
        ]
    )
    (d,) = divergence(kb)
    assert d.jsd == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    assert d.cultures == ("ar", "en", "zh")


def test_render_markdown(kb: KnowledgeBase) -> None:
    md = render_stats_markdown(kb_stats(kb), divergence(kb))
    assert "## Per culture" in md and "| culture | tuples |" in md
    assert "| en | 4 | 2 | 0 | 0 |" in md
    assert "3-4" in md and "20+" in md
    assert "## Where the cultures diverge" in md
    assert "| moon | 0.600 | 1.000 | en: contentment (1.00, n=4); zh: sadness (1.00, n=3) |" in md
    assert "Where the cultures diverge" not in render_stats_markdown(kb_stats(kb), [])


def test_graph(kb: KnowledgeBase) -> None:
    g = to_graph(kb)
    assert isinstance(g, nx.MultiDiGraph)
    kinds = nx.get_node_attributes(g, "kind")
    assert sum(k == "concept" for k in kinds.values()) == 5
    assert sum(k == "culture" for k in kinds.values()) == 2
    assert sum(k == "emotion" for k in kinds.values()) == 9
    assert g.graph["kb_version"] == kb.version
    e = g.get_edge_data(concept_node("wave"), emotion_node("awe"))
    assert set(e) == {"en", "zh"}
    assert e["en"]["weight"] == pytest.approx(0.5) and e["en"]["dominant"] is False
    assert e["zh"]["weight"] == pytest.approx(1.0) and e["zh"]["dominant"] is True and e["zh"]["culture"] == "zh"
    s = g.get_edge_data(concept_node("moon"), culture_node("zh"))["zh"]
    assert s["support"] == 3 and s["label"] == "sadness" and s["kind"] == "support" and s["rationales"] == 1
    assert not g.has_edge(concept_node("moon"), emotion_node("awe"))  # P = 0 edges are left out
    assert g.get_edge_data(concept_node("crow"), culture_node("zh"))["zh"]["status"] == "rejected"
    g2 = to_graph(kb, include_rejected=False)
    assert not g2.has_edge(concept_node("crow"), culture_node("zh"))


def test_concept_subgraph(kb: KnowledgeBase) -> None:
    g = to_graph(kb)
    sub = concept_subgraph(g, "moon")
    assert set(sub.nodes) == {
        concept_node("moon"), culture_node("en"), culture_node("zh"), emotion_node("contentment"),
        emotion_node("sadness"),
    }
    assert sub.number_of_edges() == 4
    assert set(concept_subgraph(g, concept_node("moon")).nodes) == set(sub.nodes)
    with pytest.raises(DataError, match=r"concept 'mooon' is not in the KB graph; did you mean \['moon'\]"):
        concept_subgraph(g, "mooon")


def test_dominant_emotions_of_a_wide_label_set_are_written_on_their_side() -> None:
    """`culturekb inspect`'s "Dominant emotions" table goes through the one table renderer: with a 30-label scheme
    it is one row per label (a column per culture), not 31 columns wide (issue 22)."""
    from culturekb._tables import WIDE_COLUMNS
    from culturekb.kb.schemes import scheme_from_labels

    labels = [f"feeling{i}" for i in range(30)]
    kb = KnowledgeBase([tup("moon", "en", {"feeling3": 1.0}, 4), tup("moon", "zh", {"feeling29": 1.0}, 3)],
                       scheme_from_labels(labels))
    md = render_stats_markdown(kb_stats(kb))
    section = md.split("## Dominant emotions", 1)[1].split("##", 1)[0].strip().splitlines()
    assert section[0] == "| culture | en | zh |" and len(section) == 2 + 30
    assert "| feeling3 | 1 | 0 |" in section and "| feeling29 | 0 | 1 |" in section
    assert max(len(line.split("|")) for line in md.splitlines()) <= WIDE_COLUMNS
