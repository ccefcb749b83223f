"""Retrieval: vector stores, the KB index and exact-then-semantic lookup (blocks are rendered in `inference`).

Names are imported on first use, so `import culturekb.retrieval` loads neither FAISS, Qdrant nor torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "VectorStore",
    "StoreUnavailableError",
    "make_store",
    "load_store",
    "register_store",
    "list_stores",
    "IndexMeta",
    "KBIndex",
    "build_index",
    "load_index",
    "DEFAULT_TAU",
    "MAX_QUERY_CHARS",
    "Match",
    "Retriever",
    "open_retriever",
    "Comparison",
    "Disagreement",
    "compare_cultures",
]

_LAZY = {
    "VectorStore": "culturekb.retrieval.stores.base",
    "StoreUnavailableError": "culturekb.retrieval.stores.base",
    "make_store": "culturekb.retrieval.stores.base",
    "load_store": "culturekb.retrieval.stores.base",
    "register_store": "culturekb.retrieval.stores.base",
    "list_stores": "culturekb.retrieval.stores.base",
    "IndexMeta": "culturekb.retrieval.index",
    "KBIndex": "culturekb.retrieval.index",
    "build_index": "culturekb.retrieval.index",
    "load_index": "culturekb.retrieval.index",
    "DEFAULT_TAU": "culturekb.retrieval.retriever",
    "MAX_QUERY_CHARS": "culturekb.retrieval.retriever",
    "Match": "culturekb.retrieval.retriever",
    "Retriever": "culturekb.retrieval.retriever",
    "open_retriever": "culturekb.retrieval.retriever",
    "Comparison": "culturekb.retrieval.compare",
    "Disagreement": "culturekb.retrieval.compare",
    "compare_cultures": "culturekb.retrieval.compare",
}

if TYPE_CHECKING:
    from culturekb.retrieval.compare import Comparison, Disagreement, compare_cultures
    from culturekb.retrieval.index import IndexMeta, KBIndex, build_index, load_index
    from culturekb.retrieval.retriever import DEFAULT_TAU, MAX_QUERY_CHARS, Match, Retriever, open_retriever
    from culturekb.retrieval.stores.base import (
        StoreUnavailableError,
        VectorStore,
        list_stores,
        load_store,
        make_store,
        register_store,
    )


def __getattr__(name: str) -> Any:
    """Import public names lazily (keeps heavy optional dependencies out of package import)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'culturekb.retrieval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
