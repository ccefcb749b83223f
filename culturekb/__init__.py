"""culturekb: a retrieval-augmented cultural knowledge system.

The public API a notebook or an evaluation harness imports.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "KnowledgeBase",
    "KnowledgeTuple",
    "Sample",
    "EmotionScheme",
    "get_scheme",
    "build_kb",
    "BuildConfig",
]

_LAZY = {
    "KnowledgeBase": "culturekb.kb",
    "KnowledgeTuple": "culturekb.kb",
    "Sample": "culturekb.kb",
    "EmotionScheme": "culturekb.kb",
    "get_scheme": "culturekb.kb",
    "build_kb": "culturekb.builders",
    "BuildConfig": "culturekb.builders",
}


def __getattr__(name: str) -> Any:
    """Import public names on first use so `import culturekb` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'culturekb' has no attribute {name!r}")
