"""culturekb: a retrieval-augmented cultural knowledge system.

The public API a notebook or an evaluation harness imports.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "KnowledgeBase": "culturekb.kb",
    "KnowledgeTuple": "culturekb.kb",
    "Sample": "culturekb.kb",
    "EmotionScheme": "culturekb.kb",
    "get_scheme": "culturekb.kb",
    "build_kb": "culturekb.builders",
    "BuildConfig": "culturekb.builders",
    "Retriever": "culturekb.retrieval",
    "open_retriever": "culturekb.retrieval",
    "build_index": "culturekb.retrieval",
    "cues": "culturekb.inference.injection",
    "Augmenter": "culturekb.inference.augmenter",
    "Budget": "culturekb.inference.injection",
    "BlockTemplate": "culturekb.inference.injection",
    "KnowledgeBlock": "culturekb.inference.injection",
    "KnowledgeService": "culturekb.inference.injection",
    "KBPriorPredictor": "culturekb.inference.predictors",
    "ModelPredictor": "culturekb.inference.predictors",
    "make_predictor": "culturekb.inference.predictors",
    "make_client": "culturekb.models.factory",
    "make_embedder": "culturekb.models.factory",
    "load_data": "culturekb.workflows",
    "open_augmenter": "culturekb.workflows",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """Import public names on first use so `import culturekb` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'culturekb' has no attribute {name!r}")
