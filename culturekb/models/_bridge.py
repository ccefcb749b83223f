"""The sync bridge of `culturekb.models.model.Model`: an event loop running forever in a daemon thread.

The synchronous `complete` and `complete_many` submit their coroutine to it, so they work both in plain scripts and
where an event loop is already running (notebooks, async servers).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundLoop", "shutdown_background"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class BackgroundLoop:
    """An event loop running forever in a daemon thread; sync code submits coroutines to it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait for its result (from any thread but the loop's own)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a synchronous model call was made from inside the client's own event loop; use await")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=5.0)
        if not self.loop.is_running():
            self.loop.close()


def shutdown_background(bg: BackgroundLoop, aclose: Callable[[], Awaitable[None]] | None) -> None:
    """Cancel the calls still running on the private loop, await `aclose` there (the provider's connections bound
    to that loop), then stop the loop. Also run when a `Model` is garbage-collected."""
    if bg.loop.is_closed():
        return
    if threading.current_thread() is not bg.thread:
        try:
            bg.run(_cancel_and_close(aclose))
        except Exception as exc:  # closing is best effort; the connections die with the loop anyway
            logger.debug("closing the provider failed: %r", exc)
    bg.stop()


async def _cancel_and_close(aclose: Callable[[], Awaitable[None]] | None) -> None:
    """Cancel calls still running on this loop (their callers get CancelledError), then close the provider."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if aclose is not None:
        await aclose()
