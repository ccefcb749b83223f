"""Ask a chat model for JSON, validate it, and re-ask with a correction when it is malformed.

Models wrap JSON in ```json fences, add prose around it, or get the shape wrong. `extract_json` finds the
first JSON value in an answer; `complete_json` validates it and, on failure, appends the bad answer and a
short correction to the conversation and asks again (a new request, so a cached bad answer is not replayed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from culturekb.errors import ConfigError, ModelOutputError
from culturekb.models.base import Message, ModelClient

__all__ = ["extract_json", "complete_json", "acomplete_json", "Validator"]

Validator = Callable[[Any], Any]
"""Takes the parsed JSON; raises ValueError (pydantic's ValidationError is one), TypeError or KeyError when the
shape is wrong; may return a converted value (e.g. a pydantic model), or None to keep the parsed JSON."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_MAX_START_CANDIDATES = 200
_ANSWER_PREVIEW = 300


def extract_json(text: str) -> Any:
    """The first JSON value in `text`: the whole text, else a fenced block, else the first `{...}`/`[...]`.

    Raises ValueError when there is none.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("the answer is empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for match in _FENCE.finditer(text):
        block = match.group(1).strip()
        try:
            return json.loads(block)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    tried = 0
    for pos, char in enumerate(text):
        if char not in "{[":
            continue
        try:
            value, _ = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            tried += 1
            if tried >= _MAX_START_CANDIDATES:
                break
            continue
        return value
    raise ValueError("no JSON object or array found in the answer")


def _validate(obj: Any, validate: Validator | type) -> Any:
    model_validate = getattr(validate, "model_validate", None)  # a pydantic model class
    result = model_validate(obj) if callable(model_validate) else validate(obj)
    return obj if result is None else result


def _correction(error: Exception) -> str:
    reason = str(error).strip().splitlines()
    detail = " ".join(reason[:6])[:500] if reason else type(error).__name__
    return (
        f"Your previous answer could not be used: {detail}. "
        "Answer again with only the corrected JSON value, no prose and no code fences."
    )


def _check_retries(retries: int) -> None:
    if retries < 0:
        raise ConfigError(f"complete_json: retries must be >= 0, got {retries}")


def _give_up(client: ModelClient, attempts: int, error: Exception, text: str) -> ModelOutputError:
    preview = text[:_ANSWER_PREVIEW] + ("..." if len(text) > _ANSWER_PREVIEW else "")
    return ModelOutputError(
        f"model '{client.id}' gave no valid JSON in {attempts} attempt(s); last problem: {error}; "
        f"last answer starts: {preview!r}. Fix: make the prompt state the exact JSON shape, lower the "
        "temperature, raise max_tokens if the answer was cut off, or raise `retries`"
    )


def complete_json(
    client: ModelClient,
    messages: list[Message],
    validate: Validator | type,
    retries: int = 2,
    **params: Any,
) -> Any:
    """Ask `client` for JSON, validate it, re-ask up to `retries` times; returns the validated value.

    `validate` is a callable (see `Validator`) or a pydantic model class. Raises ModelOutputError naming the
    model and showing the start of the last bad answer when every attempt fails.
    """
    _check_retries(retries)
    conversation = list(messages)
    for attempt in range(retries + 1):
        text = client.complete(conversation, **params).text
        try:
            return _validate(extract_json(text), validate)
        except (ValueError, TypeError, KeyError) as exc:
            if attempt == retries:
                raise _give_up(client, retries + 1, exc, text) from exc
            conversation = [
                *conversation,
                {"role": "assistant", "content": text},
                {"role": "user", "content": _correction(exc)},
            ]
    raise AssertionError("unreachable")  # pragma: no cover


async def acomplete_json(
    client: ModelClient,
    messages: list[Message],
    validate: Validator | type,
    retries: int = 2,
    **params: Any,
) -> Any:
    """Async `complete_json`."""
    _check_retries(retries)
    conversation = list(messages)
    for attempt in range(retries + 1):
        text = (await client.acomplete(conversation, **params)).text
        try:
            return _validate(extract_json(text), validate)
        except (ValueError, TypeError, KeyError) as exc:
            if attempt == retries:
                raise _give_up(client, retries + 1, exc, text) from exc
            conversation = [
                *conversation,
                {"role": "assistant", "content": text},
                {"role": "user", "content": _correction(exc)},
            ]
    raise AssertionError("unreachable")  # pragma: no cover
