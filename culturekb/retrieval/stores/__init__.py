"""Vector stores behind one contract: exact numpy (reference), FAISS (embedded default), Qdrant.

Backends import their libraries only when made or loaded, so importing this package stays light.
"""

from culturekb.retrieval.stores.base import (
    CultureFilter,
    SearchResult,
    StoreUnavailableError,
    VectorStore,
    list_stores,
    load_store,
    make_store,
    register_store,
)

__all__ = [
    "CultureFilter",
    "SearchResult",
    "StoreUnavailableError",
    "VectorStore",
    "list_stores",
    "load_store",
    "make_store",
    "register_store",
]
