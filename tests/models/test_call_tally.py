"""Per-item call tallies of the one model wrapper (`Model.tally`): each thread counts its own calls, cache hits and
failures apart, scopes of one model do not stack or count another's calls; and a plug-in's full client goes behind
the same wrapper, so its calls are counted too (run.json, per-item tallies)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from culturekb import registry
from culturekb.errors import ConfigError, ProviderError
from culturekb.evals._calls import client_counts
from culturekb.models import (
    CallTally,
    ClientProvider,
    Model,
    ModelResponse,
    ResponseCache,
    make_client,
    register_client,
)


def _ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


class Upper:
    """A provider: the question in capitals; a question containing 'fail' fails for good."""

    id = "upper"

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
        await asyncio.sleep(0.001)
        text = messages[-1]["content"]
        if "fail" in text:
            raise ConfigError(f"cannot answer {text!r}")
        return ModelResponse(text=text.upper(), model=self.id)


def test_each_thread_counts_its_own_calls_sent_cached_and_failed(tmp_path) -> None:
    model = Model(Upper(), cache=ResponseCache(tmp_path / "c.sqlite"), max_retries=0)
    model.complete(_ask("warm-0"))  # outside any scope: counted by the model, by no tally
    tallies: dict[int, CallTally] = {}

    def item(i: int) -> None:
        with model.tally() as calls:
            tallies[i] = calls
            model.complete(_ask(f"q-{i}"))
            model.complete(_ask(f"q-{i}"))  # the same question again: from the cache
            if i == 0:
                model.complete(_ask("warm-0"))  # cached before the scope opened
            if i % 2:
                with pytest.raises(ConfigError):
                    model.complete(_ask(f"fail-{i}"))
            model.complete_many([_ask(f"b-{i}-{k}") for k in range(3)])

    threads = [threading.Thread(target=item, args=(i,)) for i in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        model.close()
    assert [(tallies[i].sent, tallies[i].cached) for i in range(6)] == [
        (4, 2), (5, 1), (4, 1), (5, 1), (4, 1), (5, 1)]
    assert tallies[0].total == 6
    counts = model.fault_counts()
    assert counts["answers"] == 1 + 6 * 4 and counts["cache_hits"] == 7 and counts["failures"] == 3


def test_scopes_of_one_model_replace_each_other_and_ignore_other_models() -> None:
    first, second = Model(Upper(), id="first"), Model(Upper(), id="second")
    try:
        with first.tally() as outer:
            first.complete(_ask("a"))
            with first.tally() as inner:
                first.complete(_ask("b"))
                second.complete(_ask("c"))  # another model: in neither tally
            first.complete(_ask("d"))
            again = CallTally()
            with first.tally(again):
                first.complete(_ask("e"))
            with first.tally(again) as same:
                assert same is again
                asyncio.run(first.acomplete(_ask("f")))  # the async call on the caller's own loop
    finally:
        first.close()
        second.close()
    assert (outer.sent, inner.sent, again.sent) == (2, 1, 2)


class OwnClient:
    """A plug-in's full client: its own `acomplete`/`complete_many` and its own cache (a set of seen questions)."""

    def __init__(self, model: str) -> None:
        self.id = f"own:{model}"
        self.seen: set[str] = set()
        self.batches = 0
        self.closed = False

    async def acomplete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
        text = messages[-1]["content"]
        if text == "down":
            raise ProviderError("the lab server is down")
        cached = text in self.seen
        self.seen.add(text)
        return ModelResponse(text=text[::-1], model=self.id, cached=cached)

    def complete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
        return asyncio.run(self.acomplete(messages, **params))

    def complete_many(self, batch: Sequence[list[dict[str, Any]]], *, return_exceptions: bool = False,
                      **params: Any) -> list[Any]:
        self.batches += 1
        return [self.complete(m, **params) for m in batch]

    def close(self) -> None:
        self.closed = True


def test_a_plugin_full_client_goes_behind_the_wrapper_and_is_counted(tmp_path) -> None:
    with registry.CLIENTS.isolated():
        register_client("own", OwnClient)
        client = make_client("own:lab", cache=ResponseCache(tmp_path / "c.sqlite"), max_concurrency=2)
        assert isinstance(client, Model) and isinstance(client.provider, ClientProvider) and client.id == "own:lab"
        own = client.provider.client
        assert client.cache is None and client.retry.max_retries == 0  # its own cache and retries, not twice
        with client.tally() as calls:
            assert client.complete(_ask("abc")).text == "cba"
            again = client.complete(_ask("abc"))  # served from the client's own cache
            assert again.cached and again.attempts == 0
            answers = client.complete_many([_ask("xy"), _ask("abc")])  # through its own complete_many
            with pytest.raises(ProviderError, match="down"):
                client.complete(_ask("down"))
        assert [a.cached for a in answers] == [False, True] and own.batches == 1
        assert (calls.sent, calls.cached) == (3, 2)
        counts = client_counts(client)
        assert (counts["attempts"], counts["answers"], counts["cache_hits"], counts["failures"]) == (3, 2, 2, 1)
        client.close()
        assert own.closed


def test_an_object_that_is_no_client_is_refused_with_what_it_lacks() -> None:
    with registry.CLIENTS.isolated():
        register_client("nothing", lambda argument, **kw: object())
        with pytest.raises(ConfigError, match="neither a model provider .* nor a model client"):
            make_client("nothing")
