"""Contracts for model access: chat models and text embedders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Message", "ModelResponse", "ModelClient", "Embedder"]

Message = dict[str, Any]
"""One chat message in the OpenAI format: {"role": ..., "content": str | list of parts}."""


@dataclass(frozen=True)
class ModelResponse:
    """A model's answer and where it came from."""

    text: str
    model: str
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    attempts: int = 1
    """Requests the server saw for this answer (retries included); 0 for an answer served from a cache."""


@runtime_checkable
class ModelClient(Protocol):
    """A chat model. `id` is stable and goes into cache keys and provenance (e.g. `openai:gpt-4o-mini`)."""

    id: str

    async def acomplete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One chat completion. params: temperature, max_tokens, seed, response_format ..."""
        ...

    def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """Synchronous form of `acomplete`."""
        ...

    def complete_many(
        self, batch: Sequence[list[Message]], *, return_exceptions: bool = False, **params: Any
    ) -> list[Any]:
        """Many completions with bounded concurrency, answers in input order.

        With `return_exceptions=True` a failed item's slot holds its CultureKBError instead of raising.
        """
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text to L2-normalised float32 vectors. `id` names the model and goes into index metadata.

    An embedder may also have `spec`, the string `make_embedder` rebuilds it from (``use``, ``st:PATH``); an
    index records it, so that it can be reopened without being told its embedder.
    """

    id: str
    dim: int

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Shape (len(texts), dim), dtype float32, rows of unit norm."""
        ...
