"""Ask a chat model for JSON, validate it, and re-ask with a correction when it is malformed: the one loop.

Models wrap JSON in ```json fences, add prose around it, or get the shape wrong. `extract_json` finds the
first JSON value in an answer. One re-ask loop (`_reasking`) validates an answer and, on failure, appends the bad
answer and a short correction to the conversation and asks again (a new request, so a cached bad answer is not
replayed). Three faces use it:

* `complete_json` / `acomplete_json`: one conversation; ModelOutputError after the last attempt.
* `complete_json_each`: a batch sent with one `complete_many`, re-asks only for the bad answers, and every item's
  outcome recorded (``ok``, ``invalid`` or ``error``) instead of raised, for runs that score failures as 0.
* `complete_json_batch`: the same batch, raising the first failure (for builds, where a failure stops the step).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from culturekb.errors import ConfigError, CultureKBError, ModelOutputError
from culturekb.models.base import Message, ModelClient

__all__ = [
    "extract_json",
    "complete_json",
    "acomplete_json",
    "complete_json_each",
    "complete_json_batch",
    "JSONAnswer",
    "Validator",
    "Correction",
]

log = logging.getLogger(__name__)

Validator = Callable[[Any], Any]
"""Takes the parsed JSON; raises ValueError (pydantic's ValidationError is one), TypeError or KeyError when the
shape is wrong; may return a converted value (e.g. a pydantic model), or None to keep the parsed JSON."""

Correction = Callable[[Exception], str]
"""Turns what was wrong with an answer into the user message of the re-ask."""

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


def default_correction(error: Exception) -> str:
    """The re-ask message: what was wrong (first lines, at most 500 characters) and the instruction to answer
    with the corrected JSON only."""
    reason = str(error).strip().splitlines()
    detail = " ".join(reason[:6])[:500] if reason else type(error).__name__
    return (
        f"Your previous answer could not be used: {detail}. "
        "Answer again with only the corrected JSON value, no prose and no code fences."
    )


def _check_retries(retries: int) -> None:
    if retries < 0:
        raise ConfigError(f"complete_json: retries must be >= 0, got {retries}")


def _give_up(model: str, attempts: int, error: Exception, text: str) -> ModelOutputError:
    preview = text[:_ANSWER_PREVIEW] + ("..." if len(text) > _ANSWER_PREVIEW else "")
    return ModelOutputError(
        f"model '{model}' gave no valid JSON in {attempts} answer(s); last problem: {error}; "
        f"last answer starts: {preview!r}. Fix: make the prompt state the exact JSON shape, lower the "
        "temperature, raise max_tokens if the answer was cut off, or raise `retries`"
    )


def _reasking(model: str, messages: Sequence[Message], validate: Validator | type, retries: int,
              correction: Correction | None) -> Generator[list[Message], str, Any]:
    """The loop: yields the conversation to send, receives the answer's text, returns the validated value;
    after ``1 + retries`` bad answers raises ModelOutputError."""
    fix = correction or default_correction
    conversation = list(messages)
    for attempt in range(retries + 1):
        text = yield conversation
        try:
            return _validate(extract_json(text), validate)
        except (ValueError, TypeError, KeyError) as exc:
            if attempt == retries:
                raise _give_up(model, retries + 1, exc, text) from exc
            log.info("model %s: invalid JSON answer (%s); asking again", model, exc)
            conversation = [*conversation, {"role": "assistant", "content": text},
                            {"role": "user", "content": fix(exc)}]
    raise AssertionError("unreachable")  # pragma: no cover


def _send(steps: Generator[list[Message], str, Any], text: str) -> tuple[bool, Any]:
    """(done, value) when the loop accepted `text`, else (False, the next conversation to send)."""
    try:
        return False, steps.send(text)
    except StopIteration as done:
        return True, done.value


def complete_json(client: ModelClient, messages: list[Message], validate: Validator | type, retries: int = 2, *,
                  correction: Correction | None = None, **params: Any) -> Any:
    """Ask `client` for JSON, validate it, re-ask up to `retries` times; returns the validated value.

    `validate` is a callable (see `Validator`) or a pydantic model class; `correction` words the re-ask
    (default `default_correction`). Raises ModelOutputError naming the model and showing the start of the last
    bad answer when every attempt fails; a failed call raises as the client raises it.
    """
    _check_retries(retries)
    steps = _reasking(client.id, messages, validate, retries, correction)
    done, state = False, next(steps)
    while not done:
        done, state = _send(steps, client.complete(state, **params).text)
    return state


async def acomplete_json(client: ModelClient, messages: list[Message], validate: Validator | type,
                         retries: int = 2, *, correction: Correction | None = None, **params: Any) -> Any:
    """Async `complete_json`."""
    _check_retries(retries)
    steps = _reasking(client.id, messages, validate, retries, correction)
    done, state = False, next(steps)
    while not done:
        done, state = _send(steps, (await client.acomplete(state, **params)).text)
    return state


@dataclass(frozen=True)
class JSONAnswer:
    """One item's outcome: ``ok`` (`value` holds the validated value), ``invalid`` (no valid JSON after the
    re-asks) or ``error`` (a call failed; `exception` holds it)."""

    value: Any = None
    status: Literal["ok", "invalid", "error"] = "ok"
    error: str | None = None
    exception: BaseException | None = None
    asks: int = 1
    """Answers asked for: the first and every re-ask."""
    requests: int = 1
    """HTTP requests the server saw for the item (retries included; 0 when every answer came from a cache)."""


def complete_json_each(client: ModelClient, batch: Sequence[list[Message]], validate: Validator | type,
                       retries: int = 2, *, correction: Correction | None = None, **params: Any) -> list[JSONAnswer]:
    """Validated JSON answers for a batch of conversations, in input order, every failure recorded.

    The whole batch is sent with one `client.complete_many`; an answer that is not JSON or fails `validate` is
    asked again (conversation by conversation, showing the model its bad answer and what was wrong), so every item
    gets at most ``1 + retries`` attempts.
    """
    _check_retries(retries)
    if not batch:
        return []
    firsts = client.complete_many(list(batch), return_exceptions=True, **params)
    return _finish_each(client, batch, firsts, validate, retries, correction, params)


def complete_json_batch(client: ModelClient, batch: Sequence[list[Message]], validate: Validator | type,
                        retries: int = 2, *, correction: Correction | None = None, **params: Any) -> list[Any]:
    """`complete_json_each` for steps that cannot go on without every answer: returns the values, or raises the
    first failure (a failed call as the client raised it, the batch's first failure cancelling the rest;
    ModelOutputError naming the item for invalid JSON)."""
    _check_retries(retries)
    if not batch:
        return []
    firsts = client.complete_many(list(batch), **params)
    answers = _finish_each(client, batch, firsts, validate, retries, correction, params)
    for i, a in enumerate(answers):
        if a.status == "error" and a.exception is not None:
            raise a.exception
        if a.status != "ok":
            raise ModelOutputError(f"item {i} of the batch: {a.error}") from a.exception
    return [a.value for a in answers]


def _finish_each(client: ModelClient, batch: Sequence[list[Message]], firsts: Sequence[Any],
                 validate: Validator | type, retries: int, correction: Correction | None, params: dict[str, Any]
                 ) -> list[JSONAnswer]:
    """Each item's outcome from its first answer (or failure), re-asking where the answer is not valid."""
    out: list[JSONAnswer] = []
    for messages, first in zip(batch, firsts, strict=True):
        if isinstance(first, BaseException):
            out.append(JSONAnswer(status="error", error=f"{type(first).__name__}: {first}", exception=first,
                                  requests=_requests(first)))
            continue
        steps = _reasking(client.id, messages, validate, retries, correction)
        next(steps)
        asks, requests = 1, _requests(first)
        try:
            done, state = _send(steps, first.text)
            while not done:
                asks += 1
                try:
                    answer = client.complete(state, **params)
                except CultureKBError as exc:
                    requests += _requests(exc)
                    raise
                requests += _requests(answer)
                done, state = _send(steps, answer.text)
        except ModelOutputError as exc:
            out.append(JSONAnswer(status="invalid", error=f"{exc} ({requests} request(s) to the server)",
                                  exception=exc, asks=asks, requests=requests))
            continue
        except CultureKBError as exc:  # a re-ask call failed
            out.append(JSONAnswer(status="error", error=f"{type(exc).__name__}: {exc}", exception=exc, asks=asks,
                                  requests=requests))
            continue
        out.append(JSONAnswer(state, asks=asks, requests=requests))
    return out


def _requests(outcome: Any) -> int:
    """Requests the server saw for one answer (`ModelResponse.attempts`) or one failed call (the `attempts` the
    retry loop put on its error); 1 when the client does not say."""
    attempts = getattr(outcome, "attempts", None)
    return attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 1
