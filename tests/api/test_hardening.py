"""Hostile input never gets a 500: nasty strings on every endpoint that takes strings; metric labels stay
bounded under random HTTP methods and paths; paths and pids only for admin keys; a bounded in-flight limit."""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any
from urllib.parse import quote

import pytest

from tests.api.conftest import ADMIN_KEY, READ_KEY

NASTY = {
    "lone surrogate": "\ud800",
    "low surrogate in text": "full moon \udfff",
    "NUL": "full\x00moon",
    "RTL marks": "\u202efull moon\u202c\u200f",
    "line separator": "full\u2028moon\u2029",
    "BOM and zero width": "\ufeff\u200bmoon",
    "combining pile": "e" + "\u0301" * 200,
    "emoji ZWJ": "\U0001f469\u200d\U0001f52c",
    "1 MB": "a" * 1_000_000,
}


def _body(obj: Any) -> bytes:
    # json.dumps escapes lone surrogates as \\ud800, as a real client would send them
    return json.dumps(obj).encode("ascii")


def _requests(s: str) -> list[tuple[str, str, bytes | None]]:
    """(method, path, body) of every endpoint that takes a string, each with `s` in one string field."""
    # a URL stays under 8 KB (what HTTP servers accept in a request line); bodies carry the whole string
    path_s = quote(s[:4000].encode("utf-8", "surrogatepass"), safe="")
    return [
        ("POST", "/v1/lookup", _body({"concepts": [s], "culture": "en"})),
        ("POST", "/v1/lookup", _body({"concepts": ["moon"], "culture": s})),
        ("POST", "/v1/augment", _body({"prompt": s, "culture": "en"})),
        ("POST", "/v1/augment", _body({"concepts": [s], "culture": "zh", "prompt": "a question"})),
        ("POST", "/v1/augment", _body({"concepts": ["moon"], "culture": s})),
        ("GET", f"/v1/concepts/en/{path_s}", None),
        ("GET", f"/v1/concepts/{path_s}/moon", None),
        ("GET", f"/v1/prior?culture={path_s}", None),
        ("POST", "/v1/admin/reload", _body({"kb_dir": s})),
    ]


@pytest.fixture(scope="module")
def keyed(make_client):
    with make_client(read_keys=[READ_KEY], admin_keys=[ADMIN_KEY]) as c:
        yield c


@pytest.mark.parametrize("name", list(NASTY))
def test_nasty_strings_never_get_a_500(keyed, name: str) -> None:
    s = NASTY[name]
    headers = {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"}
    for method, path, body in _requests(s):
        r = keyed.request(method, path, content=body, headers=headers)
        assert r.status_code < 500, (name, method, path, r.status_code, r.text[:300])
        payload = r.json()  # every answer is valid JSON
        if r.status_code == 422 and "surrogate" in name:
            assert "surrogate" in payload["detail"] and "UTF-8" in payload["detail"], payload


def test_a_lone_surrogate_concept_is_a_clear_422(keyed) -> None:
    r = keyed.post("/v1/lookup", content=_body({"concepts": ["moon", "\ud800"], "culture": "en"}),
                   headers={"X-API-Key": READ_KEY, "Content-Type": "application/json"})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert "body.concepts.1" in detail and "U+D800" in detail


def _metric_lines(client, key: str) -> int:
    text = client.get("/metrics", headers={"X-API-Key": key}).text
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def test_random_methods_and_paths_do_not_grow_metrics(keyed) -> None:
    rng = random.Random(7)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    # one of each kind first, so every bounded label value exists before the count
    for method in ("GET", "POST", "BREW"):
        keyed.request(method, "/nowhere-0", headers={"X-API-Key": READ_KEY})
    keyed.get("/metrics", headers={"X-API-Key": READ_KEY})
    before = _metric_lines(keyed, READ_KEY)
    for i in range(300):
        method = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 12)))
        r = keyed.request(method, f"/nowhere-{i}/{rng.random()}", headers={"X-API-Key": READ_KEY})
        assert r.status_code < 500
    after = _metric_lines(keyed, READ_KEY)
    assert after == before, (before, after)
    text = keyed.get("/metrics", headers={"X-API-Key": READ_KEY}).text
    assert 'method="other"' in text and 'route="<unmatched>"' in text
    assert "nowhere" not in text


def test_paths_and_pids_only_for_admin_keys(keyed, make_client) -> None:
    kb_read = keyed.get("/v1/kb", headers={"X-API-Key": READ_KEY}).json()
    assert "kb_dir" not in kb_read or kb_read["kb_dir"] is None
    kb_admin = keyed.get("/v1/kb", headers={"X-API-Key": ADMIN_KEY}).json()
    assert kb_admin["kb_dir"].startswith("/")
    ready = keyed.get("/readyz").json()
    assert ready["status"] == "ready" and ready.get("pid") is None
    assert keyed.get("/readyz", headers={"X-API-Key": ADMIN_KEY}).json()["pid"] > 0
    assert keyed.get("/readyz", headers={"X-API-Key": READ_KEY}).json().get("pid") is None
    with make_client() as open_client:  # no keys at all: only local clients see them (the TestClient is not)
        assert open_client.get("/v1/kb").json().get("kb_dir") is None
        assert open_client.get("/readyz").json().get("pid") is None


def test_beyond_the_in_flight_limit_requests_get_a_prompt_503(make_client) -> None:
    with make_client(max_in_flight=2) as c:
        app = c.app
        gate = threading.Event()
        slow_calls = 0
        holder = app.state.holder
        retriever = holder.current.retriever
        original = retriever.lookup

        def slow_lookup(*args: Any, **kwargs: Any) -> Any:
            nonlocal slow_calls
            slow_calls += 1
            gate.wait(10)
            return original(*args, **kwargs)

        retriever.lookup = slow_lookup  # type: ignore[method-assign]
        try:
            results: list[int] = []
            threads = [threading.Thread(target=lambda: results.append(
                c.post("/v1/lookup", json={"concepts": ["moon"], "culture": "en"}).status_code)) for _ in range(2)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while slow_calls < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            r = c.post("/v1/lookup", json={"concepts": ["moon"], "culture": "en"})
            assert r.status_code == 503 and r.headers["Retry-After"] == "1"
            assert "in flight" in r.json()["detail"]
            assert slow_calls == 2  # refused at the door: it never reached the (held) lookup; no clock asserted
            assert c.get("/livez").status_code == 200  # health checks are never refused
            gate.set()
            for t in threads:
                t.join(10)
            assert results == [200, 200]
            metrics = c.get("/metrics").text
            assert "culturekb_http_rejected_total 1.0" in metrics
        finally:
            retriever.lookup = original  # type: ignore[method-assign]
