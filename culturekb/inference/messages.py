"""Chat messages in the OpenAI format, with the sample's image as a JPEG data URL part.

Local images are read with Pillow, flattened to RGB and shrunk so that their longer side is at most
`max_image_side`; `http(s)` URLs are passed through for the server to fetch; `data:image/` URLs are kept.
A missing, unreadable or decompression-bomb sized image raises `DataError` naming the file and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from culturekb._images import DEFAULT_MAX_PIXELS, image_data_url
from culturekb.errors import ConfigError, CultureKBError
from culturekb.models.base import Message, ModelClient, ModelResponse

if TYPE_CHECKING:
    from culturekb.inference.base import Prediction
    from culturekb.inference.parsing import EmbeddingFallback
    from culturekb.kb.schemes import EmotionScheme

__all__ = ["build_messages", "image_part", "ask_each", "prediction_from_answer", "DEFAULT_MAX_IMAGE_SIDE"]

P = TypeVar("P", bound="Prediction")

DEFAULT_MAX_IMAGE_SIDE = 1024


def image_part(
    image: str,
    max_image_side: int = DEFAULT_MAX_IMAGE_SIDE,
    *,
    where: str = "prompt",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    quality: int = 90,
) -> dict[str, object]:
    """An OpenAI `image_url` content part for a local path, `file://`, `http(s)://` or `data:image/` reference."""
    if max_image_side < 1:
        raise ConfigError(f"max_image_side must be >= 1 pixel, got {max_image_side}")
    url = image_data_url(image, where, max_side=max_image_side, quality=quality, max_pixels=max_pixels)
    return {"type": "image_url", "image_url": {"url": url}}


def build_messages(
    template_text: str,
    image: str | None,
    max_image_side: int = DEFAULT_MAX_IMAGE_SIDE,
    *,
    system: str | None = None,
    where: str = "prompt",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    quality: int = 90,
) -> list[Message]:
    """One user message (after an optional system message): the image part first, then the rendered prompt.

    Without an image the user content is the plain text. `where` names the sample in error messages
    (e.g. "sample 'wikiart-123'").
    """
    if not isinstance(template_text, str) or not template_text.strip():
        raise ConfigError(f"{where}: the prompt text is empty; render a template before building messages")
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    if image is None or not str(image).strip():
        messages.append({"role": "user", "content": template_text})
        return messages
    part = image_part(str(image).strip(), max_image_side, where=where, max_pixels=max_pixels, quality=quality)
    messages.append({"role": "user", "content": [part, {"type": "text", "text": template_text}]})
    return messages


def ask_each(
    client: ModelClient,
    prompts: Sequence[tuple[str, str | None, str]],
    max_image_side: int = DEFAULT_MAX_IMAGE_SIDE,
    **params: Any,
) -> list[ModelResponse | str]:
    """Ask `client` every (prompt text, image, where) in one concurrent batch; never raises for one item.

    Per item, in order: the model's response, or an error message: the item's image could not be read (the
    item is not sent) or its call failed after the client's retries. Callers record these as failed
    predictions, scored wrong, so a rerun can retry them.
    """
    out: list[ModelResponse | str] = [""] * len(prompts)
    batch: list[list[Message]] = []
    sent: list[int] = []
    for i, (text, image, where) in enumerate(prompts):
        try:
            batch.append(build_messages(text, image, max_image_side, where=where))
            sent.append(i)
        except CultureKBError as exc:  # a missing or unreadable image
            out[i] = str(exc)
    for i, answer in zip(sent, client.complete_many(batch, return_exceptions=True, **params), strict=True):
        out[i] = f"{type(answer).__name__}: {answer}" if isinstance(answer, BaseException) else answer
    return out


def prediction_from_answer(answer: ModelResponse | str, scheme: EmotionScheme, language: str | None,
                           record: type[P], *, fallback: EmbeddingFallback | None = None, **fields: Any) -> P:
    """The record of one answer from `ask_each` (`record`: `Prediction` or a subclass; `fields`: the rest of it).

    A string is the failure `ask_each` puts in an answer's place (the image could not be read, or the call
    failed): parse status ``error``, scored wrong. Otherwise label, explanation, status, the parse path and the
    embedding similarity come from `culturekb.inference.parsing.parse_prediction` (with the embedding
    `fallback` when one is given), the raw text and cache flag from the answer; the template's check status
    (`template_status`) from its id unless `fields` gives it.
    """
    from culturekb.inference.parsing import parse_prediction
    from culturekb.text.prompts import template_check_status

    if "template_status" not in fields:
        fields["template_status"] = template_check_status(str(fields.get("template_id", "")))
    if isinstance(answer, str):
        return record(label=None, parse_status="error", error=answer, **fields)
    parsed = parse_prediction(answer.text, scheme, language, fallback=fallback)
    return record(label=parsed.label, explanation=parsed.explanation, raw=answer.text, parse_status=parsed.status,
                  parse_path=parsed.path or "", parse_similarity=parsed.similarity, cached=answer.cached, **fields)
