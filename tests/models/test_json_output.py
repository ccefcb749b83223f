from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from culturekb.errors import ConfigError, ModelOutputError
from culturekb.models import OpenAICompatClient, acomplete_json, complete_json, extract_json

USER = [{"role": "user", "content": "Answer in JSON: {\"label\": ...}"}]


class Label(BaseModel):
    label: str
    confidence: float = 1.0


def needs_label(obj: Any) -> None:
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError("expected an object with a 'label' key")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"label": "awe"}', {"label": "awe"}),
        ('  [1, 2, 3]\n', [1, 2, 3]),
        ('Sure! Here it is:\n```json\n{"label": "fear"}\n```\nHope that helps.', {"label": "fear"}),
        ("```\n{\"a\": {\"b\": [1, {\"c\": null}]}}\n```", {"a": {"b": [1, {"c": None}]}}),
        ('The answer is {"label": "sadness", "why": "a {brace} inside"} and {"other": 1}.',
         {"label": "sadness", "why": "a {brace} inside"}),
        ('I think {not json} but then {"label": "awe"}', {"label": "awe"}),
        ('"contentment"', "contentment"),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "{broken: json", "```json\n{oops\n```"])
def test_extract_json_raises_value_error(text):
    with pytest.raises(ValueError):
        extract_json(text)


@pytest.fixture
def client_for(openai_server):
    clients: list[OpenAICompatClient] = []

    def make(responder: Any) -> tuple[OpenAICompatClient, Any]:
        server = openai_server(responder)
        client = OpenAICompatClient("json-model", base_url=server.base_url, backoff_s=0.01)
        clients.append(client)
        return client, server

    yield make
    for client in clients:
        client.close()


def test_malformed_then_valid_json_is_repaired_by_a_reask(client_for):
    client, server = client_for(["Sure: {label: awe", 'Fixed: ```json\n{"label": "awe"}\n```'])
    assert complete_json(client, USER, needs_label, temperature=0) == {"label": "awe"}
    assert server.chat_calls == 2
    second = server.requests[1]["messages"]
    assert second[: len(USER)] == USER
    assert second[-2] == {"role": "assistant", "content": "Sure: {label: awe"}
    assert second[-1]["role"] == "user" and "JSON" in second[-1]["content"]
    assert server.requests[1]["temperature"] == 0


def test_wrong_shape_is_reasked_with_the_validation_error(client_for):
    client, server = client_for(['{"emotion": "awe"}', '{"label": "awe", "confidence": 0.5}'])
    result = complete_json(client, USER, Label)
    assert result == Label(label="awe", confidence=0.5)
    assert "label" in server.requests[1]["messages"][-1]["content"]  # pydantic's message names the field


def test_exhausted_reasks_raise_model_output_error(client_for):
    client, server = client_for("I refuse to answer in JSON, sorry.")
    with pytest.raises(ModelOutputError) as info:
        complete_json(client, USER, needs_label, retries=2)
    message = str(info.value)
    assert "openai:json-model" in message
    assert "I refuse to answer" in message
    assert "3 answer(s)" in message
    assert server.chat_calls == 3


def test_validator_may_convert(client_for):
    client, _ = client_for('{"label": "AWE"}')
    assert complete_json(client, USER, lambda obj: obj["label"].lower()) == "awe"


def test_negative_retries_is_a_config_error(client_for):
    client, _ = client_for("{}")
    with pytest.raises(ConfigError):
        complete_json(client, USER, needs_label, retries=-1)


def test_async_variant(client_for):
    client, server = client_for(["nope", '{"label": "joy"}'])

    async def main() -> Any:
        try:
            return await acomplete_json(client, USER, needs_label)
        finally:
            await client.aclose()

    assert asyncio.run(main()) == {"label": "joy"}
    assert server.chat_calls == 2


def _ask(label: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Answer in JSON for {label}"}]


def test_each_records_ok_reasked_invalid_and_failed_items(client_for):
    from culturekb.models.json_output import complete_json_each

    def responder(body: dict[str, Any]) -> Any:
        first = body["messages"][0]["content"]
        if first.endswith("good"):
            return '{"label": "awe"}'
        if first.endswith("late"):  # valid only after a re-ask, which carries the custom correction
            return '{"label": "fear"}' if "ONLY JSON" in body["messages"][-1]["content"] else "fear, I think"
        if first.endswith("down"):
            return (500, '{"error": {"message": "down"}}')
        return "never JSON"

    client, server = client_for(responder)
    answers = complete_json_each(client, [_ask("good"), _ask("late"), _ask("bad"), _ask("down")], needs_label,
                                 1, correction=lambda exc: f"ONLY JSON please ({exc})")
    assert [a.status for a in answers] == ["ok", "ok", "invalid", "error"]
    assert answers[1].value == {"label": "fear"}
    assert "2 answer(s)" in (answers[2].error or "") and "never JSON" in (answers[2].error or "")
    # the counts are what the server saw: two asks of one request each (no transport retry)
    assert (answers[2].asks, answers[2].requests) == (2, 2)
    assert "(2 request(s) to the server)" in (answers[2].error or "")
    assert answers[0].asks == 1 and answers[1].asks == 2
    assert answers[3].value is None and "ProviderError" in (answers[3].error or "")
    assert complete_json_each(client, [], needs_label) == []


def test_batch_raises_the_first_invalid_item(client_for):
    from culturekb.models.json_output import complete_json_batch

    client, server = client_for(lambda body: '{"label": "awe"}' if "ok" in body["messages"][0]["content"]
                                else "no")
    assert complete_json_batch(client, [_ask("ok"), _ask("ok too")], needs_label) == [{"label": "awe"}] * 2
    with pytest.raises(ModelOutputError, match=r"item 1 of the batch: model 'openai:json-model' gave no valid JSON"):
        complete_json_batch(client, [_ask("ok"), _ask("bad")], needs_label, retries=1)
