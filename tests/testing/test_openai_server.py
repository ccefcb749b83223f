from __future__ import annotations

import base64
import http.client
import json
import threading
import time
from typing import Any

import numpy as np
import pytest

from culturekb.testing import DEFAULT_REPLY, ScriptedOpenAIServer, ScriptedReply, hash_embedding


def _post(server: ScriptedOpenAIServer, path: str, body: Any) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("POST", f"/v1{path}", body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode()
    finally:
        conn.close()


def _chat(server: ScriptedOpenAIServer, content: str = "hi") -> tuple[int, str]:
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    status, _, text = _post(server, "/chat/completions", body)
    return status, text


def _content(raw: str) -> str:
    return json.loads(raw)["choices"][0]["message"]["content"]


def test_base_url_and_models_endpoint(openai_server):
    server = openai_server()
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/v1/models")
    resp = conn.getresponse()
    assert resp.status == 200
    assert json.loads(resp.read())["data"][0]["object"] == "model"
    conn.close()
    assert server.calls == 0  # GET /models is not a model call


def test_default_reply_is_a_wellformed_completion(openai_server):
    server = openai_server()
    status, raw = _chat(server, "hello")
    payload = json.loads(raw)
    assert status == 200
    assert payload["object"] == "chat.completion"
    assert payload["choices"][0]["message"] == {"role": "assistant", "content": DEFAULT_REPLY}
    assert payload["usage"]["total_tokens"] == payload["usage"]["prompt_tokens"] + payload["usage"]["completion_tokens"]
    assert server.calls == server.chat_calls == 1
    assert server.requests[0]["messages"][0]["content"] == "hello"


def test_request_headers_are_recorded_with_the_bodies(openai_server):
    server = openai_server()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    conn.request("POST", "/v1/chat/completions", body=body,
                 headers={"Content-Type": "application/json", "Authorization": "Bearer sk-x"})
    assert conn.getresponse().read()
    conn.close()
    assert server.request_headers[0]["authorization"] == "Bearer sk-x"  # names lower-cased
    assert server.request_headers[0]["content-type"] == "application/json"
    assert len(server.request_headers) == len(server.requests) == 1
    server.reset()
    assert server.request_headers == []


def test_list_responder_is_consumed_in_order_and_last_repeats(openai_server):
    server = openai_server(["first", (503, '{"error": "busy"}'), "last"])
    results = [_chat(server) for _ in range(5)]
    assert [r[0] for r in results] == [200, 503, 200, 200, 200]
    assert _content(results[0][1]) == "first"
    assert results[1][1] == '{"error": "busy"}'  # raw body sent as-is
    assert [_content(r[1]) for r in results[2:]] == ["last"] * 3
    server.reset()
    assert _content(_chat(server)[1]) == "first"
    assert server.calls == 1


def test_callable_responder_sees_the_request_body(openai_server):
    server = openai_server(lambda body: body["messages"][-1]["content"].upper())
    assert _content(_chat(server, "echo me")[1]) == "ECHO ME"


def test_single_error_tuple_and_scripted_headers(openai_server):
    server = openai_server(ScriptedReply(status=429, content="slow down", headers={"Retry-After": "3"}))
    status, headers, raw = _post(server, "/chat/completions", {"model": "m", "messages": []})
    assert status == 429
    assert headers["retry-after"] == "3"
    assert json.loads(raw)["error"]["message"] == "slow down"

    garbage = openai_server((200, "not json at all"))
    assert _chat(garbage) == (200, "not json at all")


def test_broken_responder_answers_500_and_is_recorded(openai_server):
    def broken(body: dict[str, Any]) -> str:
        raise RuntimeError("bug in test responder")

    server = openai_server(broken)
    status, raw = _chat(server)
    assert status == 500
    assert "bug in test responder" in raw
    assert len(server.errors) == 1


def test_unknown_route_and_bad_json(openai_server):
    server = openai_server()
    assert _post(server, "/completions", {})[0] == 404
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body=b"{not json", headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 400
    conn.close()


@pytest.mark.parametrize("encoding", ["float", "base64"])
def test_embeddings_are_deterministic_unit_vectors(openai_server, encoding):
    server = openai_server(embed_dim=16)
    status, _, raw = _post(server, "/embeddings", {"model": "e", "input": ["a", "b", "a"], "encoding_format": encoding})
    assert status == 200
    data = json.loads(raw)["data"]
    if encoding == "base64":
        vecs = np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in data])
    else:
        vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
    assert vecs.shape == (3, 16)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    assert not np.allclose(vecs[0], vecs[1])
    np.testing.assert_allclose(vecs[1], hash_embedding("b", 16), rtol=1e-6)
    assert server.embedding_calls == 1 and server.chat_calls == 0


def test_embeddings_validate_input(openai_server):
    server = openai_server()
    assert _post(server, "/embeddings", {"model": "e", "input": [1, 2]})[0] == 400
    assert _post(server, "/embeddings", {"model": "e", "input": []})[0] == 400
    scripted = openai_server(embed_responder=lambda body: (429, "{}") if len(body["input"]) > 1 else None)
    assert _post(scripted, "/embeddings", {"model": "e", "input": ["a", "b"]})[0] == 429
    assert _post(scripted, "/embeddings", {"model": "e", "input": ["a"]})[0] == 200


def test_serves_many_slow_requests_in_parallel(openai_server):
    server = openai_server(latency_s=0.3)
    statuses: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        status, _ = _chat(server)
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=call) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 40
    assert server.max_in_flight >= 32  # served side by side, not one after another (no wall clock asserted)
    assert server.in_flight == 0


def test_blocking_callable_responders_overlap(openai_server):
    inside, most, lock = 0, 0, threading.Lock()

    def slow(body: dict[str, Any]) -> str:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.3)
        with lock:
            inside -= 1
        return "done"

    server = openai_server(slow)
    threads = [threading.Thread(target=_chat, args=(server,)) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most >= 8  # the blocking responders ran side by side (serial: 1); no wall clock asserted
    assert server.chat_calls == 16


def test_keep_alive_connection_serves_several_requests(openai_server):
    server = openai_server(["one", "two"])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for expected in ("one", "two"):
        conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "m", "messages": []}))
        resp = conn.getresponse()
        assert _content(resp.read().decode()) == expected
    conn.close()


def test_stop_frees_the_port_and_is_idempotent():
    server = ScriptedOpenAIServer().start()
    port = server.port
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=2).connect()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url


def test_stop_with_requests_in_flight_returns_promptly():
    server = ScriptedOpenAIServer(latency_s=30).start()
    outcome: list[str] = []

    def call() -> None:
        try:
            _chat(server)
            outcome.append("answered")
        except (OSError, http.client.HTTPException):
            outcome.append("dropped")

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.time() + 5
    while server.in_flight == 0 and time.time() < deadline:
        time.sleep(0.01)
    server.stop()  # with a 30 s latency in flight: a stop that waited for it would leave the answer "answered"
    t.join(timeout=5)
    assert outcome == ["dropped"]


def test_chunked_request_body(openai_server):
    server = openai_server(lambda body: body["messages"][0]["content"])
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunked hello"}]}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body=iter([body[:10], body[10:]]), encode_chunked=True,
                 headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    assert _content(conn.getresponse().read().decode()) == "chunked hello"
    conn.close()
