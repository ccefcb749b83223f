"""Model access: the one model wrapper (`Model`) over thin providers, embedders, the response cache and
JSON-output helpers.

Importing this package is light: the `openai` SDK, torch and sentence-transformers load on first use.
"""

from culturekb.models.base import Embedder, Message, ModelClient, ModelResponse
from culturekb.models.cache import CacheEntry, ResponseCache
from culturekb.models.chat import OpenAICompatClient, OpenAICompatProvider
from culturekb.models.embedders import (
    MiniLMEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    default_minilm_path,
    normalize_rows,
)
from culturekb.models.factory import (
    client_forms,
    embedder_forms,
    make_client,
    make_embedder,
    register_client,
    register_embedder,
)
from culturekb.models.json_output import acomplete_json, complete_json, extract_json
from culturekb.models.model import SERVER_PARAMS, ClientProvider, Model, Provider, as_model, is_provider
from culturekb.models.tally import CallTally

__all__ = [
    "Message",
    "ModelResponse",
    "ModelClient",
    "Embedder",
    "Model",
    "Provider",
    "is_provider",
    "as_model",
    "ClientProvider",
    "CallTally",
    "SERVER_PARAMS",
    "OpenAICompatClient",
    "OpenAICompatProvider",
    "ResponseCache",
    "CacheEntry",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "USEEmbedder",
    "OpenAIEmbedder",
    "default_minilm_path",
    "normalize_rows",
    "make_client",
    "make_embedder",
    "register_client",
    "register_embedder",
    "client_forms",
    "embedder_forms",
    "complete_json",
    "acomplete_json",
    "extract_json",
]
