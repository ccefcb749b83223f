"""The knowledge itself: schema, cultures, label schemes, the KB store, stats and graph views."""

from culturekb.kb.artemis import parse_painting_slug, split_by_image
from culturekb.kb.cultures import (
    Culture,
    CultureRegistry,
    declare_cultures,
    default_registry,
    load_cultures_file,
    packaged_registry,
    resolve_culture,
)
from culturekb.kb.graph import concept_subgraph, to_graph
from culturekb.kb.loaders import LoadResult, load_artemis_csv, load_samples_jsonl
from culturekb.kb.schema import SCHEMA_VERSION, JudgeVerdict, KnowledgeTuple, Manifest, Sample
from culturekb.kb.schemes import (
    EmotionScheme,
    get_scheme,
    list_schemes,
    load_scheme,
    map_distribution,
    scheme_from_labels,
)
from culturekb.kb.stats import Divergence, divergence, jensen_shannon, kb_stats, render_stats_markdown
from culturekb.kb.store import KnowledgeBase

__all__ = [
    "Culture",
    "CultureRegistry",
    "default_registry",
    "declare_cultures",
    "load_cultures_file",
    "packaged_registry",
    "resolve_culture",
    "SCHEMA_VERSION",
    "JudgeVerdict",
    "KnowledgeTuple",
    "Manifest",
    "Sample",
    "EmotionScheme",
    "get_scheme",
    "list_schemes",
    "load_scheme",
    "map_distribution",
    "scheme_from_labels",
    "KnowledgeBase",
    "LoadResult",
    "load_artemis_csv",
    "load_samples_jsonl",
    "parse_painting_slug",
    "split_by_image",
    "Divergence",
    "divergence",
    "jensen_shannon",
    "kb_stats",
    "render_stats_markdown",
    "to_graph",
    "concept_subgraph",
]
