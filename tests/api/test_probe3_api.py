"""Issue 24 item 8 and issue 26: what the API says about a body it cannot read, a schema that agrees with the
server on /v1/augment, and /v1/augment's prompt_language."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest


def _post(client: Any, path: str, body: str) -> Any:
    return client.post(path, content=body, headers={"content-type": "application/json"})


def test_a_body_nested_too_deeply_is_named(client: Any) -> None:
    res = _post(client, "/v1/lookup", '{"culture": "zh", "concepts": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert res.status_code == 400
    assert "nested too deeply" in res.json()["detail"] and "UTF-8" not in res.json()["detail"]


def test_a_number_too_long_is_named(client: Any) -> None:
    res = _post(client, "/v1/lookup", '{"culture": "zh", "concepts": ["bamboo"], "k": ' + "9" * 100_000 + "}")
    assert res.status_code == 400
    assert "number too long" in res.json()["detail"] and "UTF-8" not in res.json()["detail"]


def test_bytes_that_are_not_utf8_still_get_the_encoding_message(client: Any) -> None:
    res = client.post("/v1/lookup", content=b'{"culture": "\xff\xfe"}', headers={"content-type": "application/json"})
    assert res.status_code in (400, 422)
    if res.status_code == 400:
        assert "UTF-8" in res.json()["detail"]


def _augment_schema(client: Any) -> dict[str, Any]:
    spec = client.get("/openapi.json").json()
    schema = spec["components"]["schemas"]["AugmentRequest"]
    return {**schema, "components": spec["components"]}


@pytest.mark.parametrize(("body", "valid"), [
    ({"culture": "zh"}, False),
    ({"culture": "zh", "prompt": "   "}, False),
    ({"culture": "zh", "prompt": None}, False),
    ({"culture": "zh", "concepts": None}, False),
    ({"culture": "zh", "concepts": ["bamboo"]}, True),
    ({"culture": "zh", "concepts": []}, True),
    ({"culture": "zh", "prompt": "A crane over bamboo."}, True),
    ({"culture": "zh", "prompt": "\x1c\ufeff\x85"}, False),  # blank in Python and ECMAScript alike
    ({"culture": "zh", "concepts": ["bamboo"], "prompt_language": "en"}, True),
    ({"culture": "zh", "concepts": ["bamboo"], "prompt_language": "zh-CN"}, True),
    ({"culture": "zh", "concepts": ["bamboo"], "prompt_language": "../x"}, False),
])
def test_schema_and_server_agree_on_augment(client: Any, body: dict[str, Any], valid: bool) -> None:
    schema = _augment_schema(client)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(body))
    assert (not errors) == valid, (body, [e.message for e in errors])
    res = client.post("/v1/augment", json=body)
    assert (res.status_code == 200) == valid, (body, res.status_code, res.text)


def test_augment_takes_prompt_language(client: Any) -> None:
    schema = _augment_schema(client)
    assert "prompt_language" in schema["properties"]
    assert "prompt_language" in schema["properties"]["prompt_language"]["description"]
    body = {"culture": "zh", "concepts": ["bamboo"]}
    native = client.post("/v1/augment", json=body).json()
    english = client.post("/v1/augment", json={**body, "prompt_language": "en"}).json()
    regional = client.post("/v1/augment", json={**body, "prompt_language": "zh-CN"}).json()
    assert native["language"] == "zh" and english["language"] == "en" and regional["language"] == "zh"
    assert english["block"] != native["block"] and regional["block"] == native["block"]
    assert "mostly contentment" in english["block"]
    assert english["template_id"] != native["template_id"]
    # a language without the packaged template: English, and the answer says so
    other = client.post("/v1/augment", json={**body, "prompt_language": "ko"}).json()
    assert other["language"] == "en", json.dumps(other)
