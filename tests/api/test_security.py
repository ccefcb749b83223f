"""Bad input and keys: malformed JSON, wrong types, limits, unknown cultures, path-like concepts, API keys."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.api.conftest import ADMIN_KEY, READ_KEY

# -- malformed input -------------------------------------------------------------------------------------------


def test_malformed_json(client):
    r = client.post("/v1/lookup", content=b'{"concepts": ["moon"', headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert "not valid JSON" in r.json()["detail"] and r.json()["errors"][0]["type"] == "json_invalid"


def test_body_not_utf8(client):
    r = client.post("/v1/lookup", content=b"\xff\xfe{}", headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422)
    assert "UTF-8" in r.json()["detail"] or "JSON" in r.json()["detail"]


@pytest.mark.parametrize("body,where", [
    ({"concepts": "full moon", "culture": "en"}, "body.concepts"),
    ({"concepts": [1, 2], "culture": "en"}, "body.concepts.0"),
    ({"concepts": ["moon"], "culture": "en", "k": "three"}, "body.k"),
    ({"concepts": ["moon"], "culture": "en", "tau": 2}, "body.tau"),
    ({"concepts": [], "culture": "en"}, "body.concepts"),
    ({"concepts": ["moon"]}, "body.culture"),
    ({"concept": ["moon"], "culture": "en"}, "body.concept"),
    ([1, 2, 3], "body"),
])
def test_wrong_types_name_the_field(client, body, where):
    r = client.post("/v1/lookup", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(where) or where in r.json()["detail"]


def test_unknown_culture_lists_the_kb_cultures(client):
    r = client.post("/v1/lookup", json={"concepts": ["moon"], "culture": "xx"})
    assert r.status_code == 422
    assert "culture 'xx' is not in this KB" in r.json()["detail"] and "en, zh" in r.json()["detail"]
    r = client.post("/v1/augment", json={"concepts": ["moon"], "culture": "klingon"})
    assert r.status_code == 422 and "en, zh" in r.json()["detail"]


def test_cross_culture_needs_another_culture(make_client, kb_dirs, default_embedder, tmp_path):
    from tests.api.conftest import save_kb, small_tuples

    one = save_kb(tmp_path / "one", [t for t in small_tuples() if t.culture == "en"], default_embedder)
    with make_client(one) as c:
        r = c.post("/v1/lookup", json={"concepts": ["storm"], "culture": "en", "cross_culture": True})
    assert r.status_code == 422 and "cross-culture lookup needs a culture other than" in r.json()["detail"]


# -- limits ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tight(make_client):
    with make_client(max_batch=4, max_concept_chars=20, max_body_bytes=2048, max_prompt_chars=100, max_k=3) as c:
        yield c


def test_batch_limit_says_what_to_change(tight):
    r = tight.post("/v1/lookup", json={"concepts": ["moon"] * 5, "culture": "en"})
    assert r.status_code == 422
    assert r.json()["detail"] == ("body.concepts: 5 concepts in one request; the limit is 4. Split the batch into "
                                  "requests of at most 4 concepts")
    assert tight.post("/v1/lookup", json={"concepts": ["moon"] * 4, "culture": "en"}).status_code == 200
    assert tight.post("/v1/augment", json={"concepts": ["moon"] * 5, "culture": "en"}).status_code == 422


def test_string_and_k_limits(tight):
    r = tight.post("/v1/lookup", json={"concepts": ["moon", "x" * 21], "culture": "en"})
    assert r.status_code == 422 and "concept 1 has 21 characters; the limit is 20" in r.json()["detail"]
    assert r.json()["errors"][0]["loc"] == ["body", "concepts", 1]
    r = tight.post("/v1/augment", json={"prompt": "p" * 101, "culture": "en"})
    assert r.status_code == 422 and "the prompt has 101 characters; the limit is 100" in r.json()["detail"]
    r = tight.post("/v1/lookup", json={"concepts": ["moon"], "culture": "en", "k": 4})
    assert r.status_code == 422 and "the limit is 3" in r.json()["detail"]
    assert r.json()["errors"][0]["loc"] == ["body", "k"]
    r = tight.post("/v1/lookup", json={"concepts": ["moon"], "culture": "x" * 65})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "string_too_long"


def test_body_size_limit_with_and_without_content_length(tight):
    big = ('{"concepts": [' + ",".join(['"moon"'] * 600) + '], "culture": "en"}').encode()
    r = tight.post("/v1/lookup", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert f"request body is {len(big)} bytes; the limit is 2048 bytes" in r.json()["detail"]

    def chunks():  # no Content-Length: the body arrives chunked
        for i in range(0, len(big), 500):
            yield big[i:i + 500]

    r = tight.post("/v1/lookup", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "the limit is 2048 bytes" in r.json()["detail"]
    small = b'{"concepts": ["moon"], "culture": "en"}'
    r = tight.post("/v1/lookup", content=iter([small[:10], small[10:]]), headers={"Content-Type": "application/json"})
    assert r.status_code == 200


def test_configured_limits_are_in_the_openapi_document(tight):
    props = tight.get("/openapi.json").json()["components"]["schemas"]["LookupRequest"]["properties"]
    assert props["concepts"]["maxItems"] == 4 and props["concepts"]["items"]["maxLength"] == 20
    assert props["k"]["maximum"] == 3


# -- path-like concept strings ---------------------------------------------------------------------------------

_OPENED: list[str] = []
_WATCH: list[str] = []


def _audit(event: str, args: tuple) -> None:
    if _WATCH and event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], str | bytes | Path):
        path = str(args[0])
        if any(w in path for w in _WATCH):
            _OPENED.append(path)


sys.addaudithook(_audit)


def test_path_like_concepts_are_plain_text(client, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    paths = ["../../etc/passwd", str(secret), "file:///etc/passwd", "..\\..\\windows\\win.ini", "~/.ssh/id_rsa"]
    _WATCH[:] = ["passwd", "secret.txt", "win.ini", "id_rsa"]
    try:
        secret.read_text(encoding="utf-8")  # the hook sees file access (control)
        assert _OPENED == [str(secret)]
        _OPENED.clear()
        r = client.post("/v1/lookup", json={"concepts": paths, "culture": "en"})
        a = client.post("/v1/augment", json={"concepts": paths, "culture": "en", "prompt": str(secret)})
        g = client.get("/v1/concepts/en/..%2F..%2Fetc%2Fpasswd")
        g2 = client.get("/v1/concepts/en/" + str(secret).replace("/", "%2F"))
    finally:
        _WATCH.clear()
    assert _OPENED == [], f"a request opened {_OPENED}"
    assert r.status_code == 200 and a.status_code == 200
    assert [i["normalised"] for i in r.json()["results"]][0] == "etc passwd"
    assert all(i["match"] is None for i in r.json()["results"])
    assert g.status_code == 404 and "'../../etc/passwd'" in g.json()["detail"]
    assert g2.status_code == 404
    for resp in (r, a, g, g2):
        assert "TOP-SECRET" not in resp.text and "root:" not in resp.text


# -- API keys --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(make_client):
    with make_client(read_keys=[READ_KEY], admin_keys=[ADMIN_KEY]) as c:
        yield c


@pytest.mark.parametrize("path", ["/v1/kb", "/v1/cultures", "/metrics", "/v1/concepts/en/storm"])
def test_read_routes_need_a_key(keyed, path):
    r = keyed.get(path)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer KEY" in r.json()["detail"]
    assert keyed.get(path, headers={"Authorization": "Bearer wrong-key-000000"}).status_code == 401
    assert keyed.get(path, headers={"Authorization": f"Bearer {READ_KEY}"}).status_code == 200
    assert keyed.get(path, headers={"X-API-Key": READ_KEY}).status_code == 200
    assert keyed.get(path, headers={"X-API-Key": ADMIN_KEY}).status_code == 200


def test_health_routes_need_no_key(keyed):
    assert keyed.get("/livez").status_code == 200
    assert keyed.get("/readyz").status_code == 200


def test_admin_route_needs_the_admin_key(keyed):
    assert keyed.post("/v1/admin/reload").status_code == 401
    r = keyed.post("/v1/admin/reload", headers={"X-API-Key": "not-a-valid-key"})
    assert r.status_code == 401 and "not valid" in r.json()["detail"]
    r = keyed.post("/v1/admin/reload", headers={"X-API-Key": READ_KEY})
    assert r.status_code == 403 and "needs an admin key" in r.json()["detail"]
    r = keyed.post("/v1/admin/reload", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert r.status_code == 200 and r.json()["changed"] is False


def test_admin_routes_are_off_without_an_admin_key(client):
    r = client.post("/v1/admin/reload", headers={"X-API-Key": ADMIN_KEY})
    assert r.status_code == 403 and "no admin key is configured" in r.json()["detail"]
    assert client.get("/v1/kb").status_code == 200  # read routes are open without keys


def test_keys_from_environment_and_file(make_client, monkeypatch, tmp_path):
    from culturekb.api.settings import ApiSettings, read_api_keys_file
    from culturekb.errors import ConfigError

    monkeypatch.setenv("CULTUREKB_API_READ_KEYS", "env-read-key-1, env-read-key-2")
    assert ApiSettings().read_keys == ["env-read-key-1", "env-read-key-2"]
    keys = tmp_path / "keys.toml"
    keys.write_text('read = ["file-read-key-1"]\nadmin = ["file-admin-key-1"]\n', encoding="utf-8")
    with make_client(api_keys_file=keys) as c:
        assert c.get("/v1/kb", headers={"X-API-Key": "env-read-key-2"}).status_code == 200
        assert c.get("/v1/kb", headers={"X-API-Key": "file-read-key-1"}).status_code == 200
        assert c.post("/v1/admin/reload", headers={"X-API-Key": "file-admin-key-1"}).status_code == 200
        assert c.post("/v1/admin/reload", headers={"X-API-Key": "env-read-key-1"}).status_code == 403
    bad = tmp_path / "bad.toml"
    bad.write_text('read = "just-one-key"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a list of strings"):
        read_api_keys_file(bad)
    bad.write_text('read = ["short"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="at least 8 characters"):
        read_api_keys_file(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        read_api_keys_file(tmp_path / "missing.toml")


def test_missing_api_extra_names_the_pip_line(monkeypatch):
    import culturekb.api as api
    from culturekb.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.delitem(api.__dict__, "create_app", raising=False)
    with pytest.raises(MissingExtraError, match=r"pip install 'culturekb\[api\]'"):
        api.create_app  # noqa: B018
