"""Graph views of a KB (networkx): concept, culture and emotion nodes.

Nodes are ``"concept:<name>"``, ``"culture:<id>"`` and ``"emotion:<label>"``, each with ``kind`` (``concept``,
``culture``, ``emotion``) and ``name``. Edges, in a `networkx.MultiDiGraph` keyed by culture:

* concept -> emotion, one per culture and label with P(e) > 0: ``kind="association"``, ``culture``,
  ``weight`` = P(e), ``dominant`` (is this the dominant emotion), ``support``;
* concept -> culture: ``kind="support"``, ``support`` = |N_r|, ``label`` (dominant emotion), ``flagged``,
  ``status``, ``rationales`` (count).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from culturekb.errors import DataError
from culturekb.kb.store import KnowledgeBase

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["to_graph", "concept_subgraph", "concept_node", "culture_node", "emotion_node"]


def concept_node(concept: str) -> str:
    """Graph node id of a concept."""
    return f"concept:{concept}"


def culture_node(culture: str) -> str:
    """Graph node id of a culture."""
    return f"culture:{culture}"


def emotion_node(label: str) -> str:
    """Graph node id of an emotion (or other label)."""
    return f"emotion:{label}"


def to_graph(kb: KnowledgeBase, include_rejected: bool = True) -> nx.MultiDiGraph:
    """The KB as a typed multigraph (see the module docstring); rejected tuples are left out when asked."""
    import networkx as nx

    g = nx.MultiDiGraph(kb_version=kb.version, label_scheme=kb.scheme.name)
    for label in kb.scheme.labels:
        g.add_node(emotion_node(label), kind="emotion", name=label, quadrant=kb.scheme.quadrant_of(label))
    for culture in kb.cultures:
        g.add_node(culture_node(culture), kind="culture", name=culture)
    for t in kb:
        if t.status == "rejected" and not include_rejected:
            continue
        cn = concept_node(t.concept)
        if cn not in g:
            g.add_node(cn, kind="concept", name=t.concept)
        g.add_edge(
            cn, culture_node(t.culture), key=t.culture, kind="support", support=t.support, label=t.label,
            flagged=t.flagged, status=t.status, rationales=len(t.rationales),
        )
        for label, p in t.distribution.items():
            if p > 0:
                g.add_edge(
                    cn, emotion_node(label), key=t.culture, kind="association", culture=t.culture, weight=float(p),
                    dominant=label == t.label, support=t.support,
                )
    return g


def concept_subgraph(g: nx.MultiDiGraph, concept: str) -> nx.MultiDiGraph:
    """A copy of the concept's node, its emotion and culture neighbours and the edges between them."""
    node = concept if concept in g and g.nodes[concept].get("kind") == "concept" else concept_node(concept)
    if node not in g:
        names = [d["name"] for _, d in g.nodes(data=True) if d.get("kind") == "concept"]
        close = difflib.get_close_matches(concept, names, n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise DataError(f"concept {concept!r} is not in the KB graph{hint}")
    keep = {node, *g.successors(node)}
    sub: nx.MultiDiGraph = g.subgraph(keep).copy()
    return sub
