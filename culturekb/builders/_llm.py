"""Batched JSON answers from a chat model: one `complete_many` for the batch, retries only for bad answers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from culturekb.errors import ConfigError, ModelOutputError
from culturekb.models.base import Message, ModelClient
from culturekb.models.json_output import complete_json, extract_json

__all__ = ["complete_json_batch"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _correction(error: Exception) -> str:
    detail = " ".join(str(error).split())[:300] or type(error).__name__
    return (
        f"Your previous answer could not be used: {detail}. "
        "Answer again with only the corrected JSON value, no prose and no code fences."
    )


def complete_json_batch(
    client: ModelClient,
    batch: Sequence[list[Message]],
    validate: Callable[[Any], T],
    retries: int = 2,
    **params: Any,
) -> list[T]:
    """Validated JSON answers for a batch of conversations, in input order.

    The whole batch is sent with `client.complete_many`. An answer that is not JSON or fails `validate` is asked
    again through `complete_json`, on a conversation that shows the model its bad answer and what was wrong, with
    `retries - 1` further retries; so every item gets at most `1 + retries` attempts, then ModelOutputError.
    """
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries}")
    if not batch:
        return []
    responses = client.complete_many(list(batch), **params)
    out: list[T] = []
    for i, (messages, resp) in enumerate(zip(batch, responses, strict=True)):
        try:
            out.append(validate(extract_json(resp.text)))
            continue
        except (ValueError, TypeError, KeyError) as exc:
            if retries < 1:
                raise ModelOutputError(
                    f"model '{client.id}', item {i} of the batch: no valid JSON ({exc}); the answer starts "
                    f"{resp.text[:200]!r}. Fix: raise `retries`, lower the temperature or check the prompt"
                ) from exc
            logger.info("model %s, item %d: invalid JSON answer (%s); asking again", client.id, i, exc)
            conversation = [
                *messages,
                {"role": "assistant", "content": resp.text},
                {"role": "user", "content": _correction(exc)},
            ]
        out.append(complete_json(client, conversation, validate, retries=retries - 1, **params))
    return out
