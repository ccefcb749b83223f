"""Per-item model-call counts: a `ModelClient` wrapper that tallies the requests one item (a question, a story)
makes, sent and served from the response cache apart.

A client's own counters (`OpenAICompatClient.calls`, `cache_hits`) cover every item of a run at once, and a run
answers many items concurrently; a runner that reports how many calls each item took wraps the shared client once
per item: ``counted = CountingClient(client, tally)``. The wrapper only delegates and counts; retries inside the
client are not counted again (a request that the client retried is one call here).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from culturekb.models.base import Message, ModelClient, ModelResponse

__all__ = ["CallTally", "CountingClient"]


@dataclass
class CallTally:
    """Calls one item made: `sent` (answered by the model) and `cached` (served from the response cache)."""

    sent: int = 0
    cached: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def total(self) -> int:
        """Every answer the item received, sent or cached."""
        return self.sent + self.cached

    def add(self, response: Any) -> None:
        """Count one answer (a `ModelResponse`; anything else, such as a failure in a batch, counts as sent)."""
        with self._lock:
            if isinstance(response, ModelResponse) and response.cached:
                self.cached += 1
            else:
                self.sent += 1


class CountingClient:
    """A `ModelClient` that delegates to `client` and adds every answer (or failure) to `tally`."""

    def __init__(self, client: ModelClient, tally: CallTally) -> None:
        self.client = client
        self.tally = tally
        self.id = client.id

    async def acomplete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One chat completion, counted."""
        try:
            response = await self.client.acomplete(messages, **params)
        except Exception:
            self.tally.add(None)
            raise
        self.tally.add(response)
        return response

    def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """Synchronous `acomplete`, counted."""
        try:
            response = self.client.complete(messages, **params)
        except Exception:
            self.tally.add(None)
            raise
        self.tally.add(response)
        return response

    def complete_many(self, batch: Sequence[list[Message]], *, return_exceptions: bool = False, **params: Any
                      ) -> list[Any]:
        """A batch of completions, each counted (a failed one as sent)."""
        try:
            answers = self.client.complete_many(batch, return_exceptions=return_exceptions, **params)
        except Exception:
            self.tally.add(None)
            raise
        for answer in answers:
            self.tally.add(answer)
        return answers
