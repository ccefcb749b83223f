"""culturekb: a retrieval-augmented cultural knowledge system.

The public API a notebook or an evaluation harness imports::

    from culturekb import build_kb, open_retriever, open_augmenter

Names are imported on first use, so `import culturekb` stays light (no torch, no FAISS); the `TYPE_CHECKING`
imports below give type checkers and editors the real types of every name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from culturekb._version import __version__

if TYPE_CHECKING:
    from culturekb.builders import BuildConfig, BuildResult, build_kb
    from culturekb.config import Settings, load_settings
    from culturekb.errors import ConfigError, CultureKBError, DataError
    from culturekb.inference.augmenter import AugmentedPrompt, Augmenter
    from culturekb.inference.injection import BlockTemplate, Budget, KnowledgeBlock, KnowledgeService, cues
    from culturekb.inference.predictors import KBPriorPredictor, ModelPredictor, make_predictor
    from culturekb.kb import EmotionScheme, KnowledgeBase, KnowledgeTuple, Sample, get_scheme
    from culturekb.models.factory import make_client, make_embedder
    from culturekb.retrieval import Retriever, build_index, open_retriever
    from culturekb.workflows import load_data, open_augmenter

_LAZY = {
    "KnowledgeBase": "culturekb.kb",
    "KnowledgeTuple": "culturekb.kb",
    "Sample": "culturekb.kb",
    "EmotionScheme": "culturekb.kb",
    "get_scheme": "culturekb.kb",
    "build_kb": "culturekb.builders",
    "BuildConfig": "culturekb.builders",
    "BuildResult": "culturekb.builders",
    "Retriever": "culturekb.retrieval",
    "open_retriever": "culturekb.retrieval",
    "build_index": "culturekb.retrieval",
    "cues": "culturekb.inference.injection",
    "Augmenter": "culturekb.inference.augmenter",
    "AugmentedPrompt": "culturekb.inference.augmenter",
    "Budget": "culturekb.inference.injection",
    "BlockTemplate": "culturekb.inference.injection",
    "KnowledgeBlock": "culturekb.inference.injection",
    "KnowledgeService": "culturekb.inference.injection",
    "KBPriorPredictor": "culturekb.inference.predictors",
    "ModelPredictor": "culturekb.inference.predictors",
    "make_predictor": "culturekb.inference.predictors",
    "make_client": "culturekb.models.factory",
    "make_embedder": "culturekb.models.factory",
    "Settings": "culturekb.config",
    "load_settings": "culturekb.config",
    "CultureKBError": "culturekb.errors",
    "ConfigError": "culturekb.errors",
    "DataError": "culturekb.errors",
    "load_data": "culturekb.workflows",
    "open_augmenter": "culturekb.workflows",
}

__all__ = [
    "__version__",
    "KnowledgeBase",
    "KnowledgeTuple",
    "Sample",
    "EmotionScheme",
    "get_scheme",
    "build_kb",
    "BuildConfig",
    "BuildResult",
    "Retriever",
    "open_retriever",
    "build_index",
    "cues",
    "Augmenter",
    "AugmentedPrompt",
    "Budget",
    "BlockTemplate",
    "KnowledgeBlock",
    "KnowledgeService",
    "KBPriorPredictor",
    "ModelPredictor",
    "make_predictor",
    "make_client",
    "make_embedder",
    "Settings",
    "load_settings",
    "CultureKBError",
    "ConfigError",
    "DataError",
    "load_data",
    "open_augmenter",
]


def __getattr__(name: str) -> Any:
    """Import public names on first use so `import culturekb` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'culturekb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
