"""Per-scope call tallies of the one model wrapper: how many answers one item (a story, a question) got, sent to
the model and served from the response cache apart.

The wrapper's own counters (`Model.calls`, `cache_hits`, `fault_counts`) cover every item of a run at once, and a
run answers many items concurrently. A runner that reports each item's calls opens a scope around that item's
requests::

    with client.tally() as calls:           # or client.tally(existing) to go on adding to one
        client.complete(messages)
    calls.sent, calls.cached

The scope is a context variable, so concurrent items (threads, tasks) each count their own; the wrapper reads it
where a call starts (in the caller's thread for the synchronous methods, before they cross to the wrapper's
private event loop). Scopes do not stack: an inner scope of the same model replaces the outer one until it ends,
and a scope of one model does not count another's calls. A request the wrapper retried is one answer here.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallTally", "tally_scope", "active_tally"]


@dataclass
class CallTally:
    """Answers one scope received: `sent` (from the model, or the call failed) and `cached` (from the cache)."""

    sent: int = 0
    cached: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def total(self) -> int:
        """Every answer the scope received, sent or cached."""
        return self.sent + self.cached

    def add(self, cached: bool, n: int = 1) -> None:
        """Count `n` answers: from the cache when `cached`, else sent (a failed call counts as sent)."""
        with self._lock:
            if cached:
                self.cached += n
            else:
                self.sent += n


_SCOPES: contextvars.ContextVar[tuple[tuple[Any, CallTally], ...]] = contextvars.ContextVar(
    "culturekb_model_tallies", default=())
"""(model, tally) pairs open in this context, one per model."""


@contextmanager
def tally_scope(model: Any, tally: CallTally | None = None) -> Iterator[CallTally]:
    """Count `model`'s answers in this context into `tally` (a new one when None) until the block ends."""
    into = tally if tally is not None else CallTally()
    others = tuple(pair for pair in _SCOPES.get() if pair[0] is not model)
    token = _SCOPES.set((*others, (model, into)))
    try:
        yield into
    finally:
        _SCOPES.reset(token)


def active_tally(model: Any) -> CallTally | None:
    """The tally `model`'s calls go to in this context, or None outside any scope."""
    for owner, tally in _SCOPES.get():
        if owner is model:
            return tally
    return None
