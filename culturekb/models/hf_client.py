"""The provider for a local Hugging Face transformers vision-language model (`hf:PATH`), and `HFVLMClient`, the one
model wrapper (`models.model.Model`: cache, counters, sync bridge) around it.

Loads a checkpoint folder with `AutoProcessor` + `AutoModelForImageTextToText` (text-only checkpoints fall back
to `AutoModelForCausalLM`), never from the hub (`local_files_only=True`). OpenAI-format messages (text parts and
`image_url` parts holding data URLs or local paths) are converted to the processor's chat format with PIL
images, rendered with the processor's chat template, and generated greedily unless `temperature > 0`.
torch and transformers are imported on first use; without them the client raises `MissingExtraError` with the
pip line.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturekb._images import DEFAULT_MAX_PIXELS, decode_data_url, is_remote_url, load_image
from culturekb.errors import ConfigError, CultureKBError, DataError, ProviderError, require
from culturekb.models.base import Message, ModelResponse
from culturekb.models.cache import ResponseCache
from culturekb.models.model import Model

__all__ = ["HFVLMClient", "HFVLMProvider", "hf_client_factory", "to_hf_conversation"]

logger = logging.getLogger(__name__)

_FEATURE = "the local Hugging Face model client (hf:PATH)"
_PARAMS = frozenset(
    {"temperature", "max_tokens", "max_completion_tokens", "max_new_tokens", "top_p", "top_k", "seed", "stop", "n",
     "repetition_penalty"}
)


def _torch() -> Any:
    return require("torch", "vision", _FEATURE)


def _transformers() -> Any:
    return require("transformers", "vision", _FEATURE)


def _resolve_dtype(dtype: Any, device: str) -> Any:
    torch = _torch()
    if dtype is None:
        return torch.float32 if device == "cpu" else "auto"
    if isinstance(dtype, str):
        if dtype == "auto":
            return "auto"
        found = getattr(torch, dtype.removeprefix("torch."), None)
        if not isinstance(found, torch.dtype):
            raise ConfigError(
                f"dtype {dtype!r} is not a torch dtype; use e.g. 'float32', 'bfloat16', 'float16' or 'auto'"
            )
        return found
    return dtype


def _resolve_device(device: str) -> str:
    if device == "auto":
        torch = _torch()
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    return device


def _image_from_ref(ref: Any, where: str, max_side: int, max_pixels: int) -> Any:
    """A PIL image from a data URL, a local path / file:// URL, or a PIL image passed through."""
    if not isinstance(ref, str):
        if hasattr(ref, "convert") and hasattr(ref, "size"):
            return ref.convert("RGB")
        raise DataError(f"{where}: image part holds a {type(ref).__name__}; expected a data URL or a file path")
    if ref.startswith("data:"):
        return decode_data_url(ref, where, max_side=max_side, max_pixels=max_pixels)
    if is_remote_url(ref):
        raise DataError(
            f"{where}: image {ref[:80]} is a remote URL; the local hf: client does not download images. Download "
            "it and pass the file path, or build messages with culturekb.inference.build_messages (data URLs)"
        )
    return load_image(ref, where, max_side=max_side, max_pixels=max_pixels)


def to_hf_conversation(
    messages: list[Message],
    where: str = "messages",
    max_image_side: int = 1024,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    text_only: bool = False,
) -> tuple[list[dict[str, Any]], list[Any]]:
    """OpenAI-format messages -> (conversation for `apply_chat_template`, PIL images in order of appearance).

    Text parts become `{"type": "text"}` items and image parts `{"type": "image"}` placeholders; with
    `text_only` (a tokenizer without an image processor) each content becomes a plain string and an image is an
    error.
    """
    conversation: list[dict[str, Any]] = []
    images: list[Any] = []
    if not isinstance(messages, list) or not messages:
        raise ConfigError(f"{where}: expected a non-empty list of chat messages, got {messages!r:.80}")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            raise ConfigError(f"{where}[{i}]: a message must be a dict with 'role' and 'content', got {msg!r:.80}")
        content = msg.get("content")
        items: list[dict[str, Any]] = []
        if content is None:
            content = ""
        if isinstance(content, str):
            items.append({"type": "text", "text": content})
        elif isinstance(content, list):
            for j, part in enumerate(content):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    items.append({"type": "text", "text": str(part.get("text", ""))})
                elif kind in ("image_url", "image"):
                    if text_only:
                        raise ConfigError(
                            f"{where}[{i}].content[{j}]: the model has no image processor (a text-only checkpoint) "
                            "but the message holds an image; use a vision-language model or drop the image"
                        )
                    ref = part.get("image_url", part.get("image"))
                    if isinstance(ref, dict):
                        ref = ref.get("url")
                    images.append(_image_from_ref(ref, f"{where}[{i}].content[{j}]", max_image_side, max_pixels))
                    items.append({"type": "image"})
                else:
                    raise ConfigError(
                        f"{where}[{i}].content[{j}]: unsupported content part {part!r:.80}; use "
                        "{'type': 'text', 'text': ...} or {'type': 'image_url', 'image_url': {'url': ...}}"
                    )
        else:
            raise ConfigError(
                f"{where}[{i}]: content must be a string or a list of parts, got {type(content).__name__}"
            )
        if text_only:
            conversation.append({"role": msg["role"], "content": "".join(it["text"] for it in items)})
        else:
            conversation.append({"role": msg["role"], "content": items})
    return conversation, images


class HFVLMProvider:
    """A local transformers VLM as a provider (`models.model`); id `hf:<path>`.

    `path`: a local checkpoint folder (config, weights, processor files); with `model` and `processor` given,
    nothing is loaded and `path` only names the client. `device`: "cpu", "cuda", "cuda:1", "mps" or "auto".
    `dtype`: None (float32 on CPU, the checkpoint's dtype elsewhere), "auto", or a torch dtype or its name.
    Decoding is greedy unless a call passes `temperature > 0`; `max_tokens` caps new tokens (default
    `max_new_tokens`). `complete_batch` batches up to `batch_size` prompts with the same number of images.
    Calls are serialised on one lock (one model, one generate at a time) and run in a worker thread. The wrapper
    drops the server-only parameters (response_format ...) and rejects parameters not in `params`.
    """

    params = _PARAMS

    def __init__(
        self,
        path: str | Path,
        device: str = "cpu",
        max_new_tokens: int = 128,
        dtype: Any = None,
        model: Any = None,
        processor: Any = None,
        *,
        batch_size: int = 4,
        max_image_side: int = 1024,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        trust_remote_code: bool = False,
    ) -> None:
        if max_new_tokens < 1:
            raise ConfigError(f"HFVLMClient: max_new_tokens must be >= 1, got {max_new_tokens}")
        if batch_size < 1:
            raise ConfigError(f"HFVLMClient: batch_size must be >= 1, got {batch_size}")
        if (model is None) != (processor is None):
            raise ConfigError("HFVLMClient: pass both model and processor, or neither (then they load from path)")
        self.path = str(path)
        self.device = _resolve_device(device)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.max_image_side = max_image_side
        self.max_pixels = max_pixels
        self._lock = threading.Lock()
        if model is None:
            model, processor = self._load(Path(self.path).expanduser(), dtype, trust_remote_code)
        else:
            _torch()
            _transformers()
        name = self.path or str(getattr(model, "name_or_path", "") or type(model).__name__)
        self.id = f"hf:{name}"
        self.model = model
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", None) or processor
        self.text_only = not hasattr(processor, "image_processor")
        self.tokenizer.padding_side = "left"  # decoder-only batched generation pads on the left
        if getattr(self.tokenizer, "pad_token_id", None) is None and getattr(self.tokenizer, "eos_token", None):
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if not (getattr(processor, "chat_template", None) or getattr(self.tokenizer, "chat_template", None)):
            raise ConfigError(
                f"{self.id}: the checkpoint has no chat template (chat_template.jinja or tokenizer_config.json "
                "'chat_template'); use an instruction-tuned checkpoint or add a chat template to its folder"
            )

    # -- loading ----------------------------------------------------------------------------------------------

    def _load(self, path: Path, dtype: Any, trust_remote_code: bool) -> tuple[Any, Any]:
        transformers = _transformers()
        if not path.exists():
            raise ConfigError(
                f"hf model path {path} does not exist. The hf: client loads local checkpoints only and never "
                "downloads; fetch the model first (e.g. `huggingface-cli download ORG/NAME --local-dir DIR`) and "
                "pass hf:DIR"
            )
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"hf model path {path} has no config.json, so it is not a transformers checkpoint folder; "
                "pass the folder that holds config.json, the weights and the processor files"
            )
        kw: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
        try:
            processor = transformers.AutoProcessor.from_pretrained(str(path), **kw)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"cannot load the processor/tokenizer from {path} ({type(exc).__name__}: {exc}); the folder needs "
                "its tokenizer and processor files (save them with processor.save_pretrained)"
            ) from exc
        model_kw = {**kw, "dtype": _resolve_dtype(dtype, self.device)}
        try:
            try:
                model = transformers.AutoModelForImageTextToText.from_pretrained(str(path), **model_kw)
            except ValueError as exc:
                if "Unrecognized configuration class" not in str(exc):
                    raise
                logger.info("%s is not an image-text-to-text model; loading it as a text-only causal LM", path)
                model = transformers.AutoModelForCausalLM.from_pretrained(str(path), **model_kw)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise ConfigError(
                f"cannot load the model weights from {path} ({type(exc).__name__}: {exc}); check that the folder "
                "holds a complete image-text-to-text (or causal LM) checkpoint"
            ) from exc
        model.to(self.device)
        model.eval()
        logger.info("loaded %s on %s (%s)", path, self.device, type(model).__name__)
        return model, processor

    # -- generation -------------------------------------------------------------------------------------------

    def _generation_kwargs(self, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        if params.get("n", 1) not in (1, None):
            raise ConfigError(f"{self.id}: n={params['n']} is not supported; ask for one completion per call")
        limit = params.get("max_tokens") or params.get("max_completion_tokens") or params.get("max_new_tokens")
        max_new = int(limit) if limit else self.max_new_tokens
        if max_new < 1:
            raise ConfigError(f"{self.id}: max_tokens must be >= 1, got {limit}")
        temperature = params.get("temperature")
        kw: dict[str, Any] = {"max_new_tokens": max_new}
        if temperature is not None and float(temperature) > 0:
            kw.update(do_sample=True, temperature=float(temperature))
            if params.get("top_p") is not None:
                kw["top_p"] = float(params["top_p"])
            if params.get("top_k") is not None:
                kw["top_k"] = int(params["top_k"])
            if params.get("seed") is not None:
                _torch().manual_seed(int(params["seed"]))  # generate() samples from torch's global generator
        else:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.get("repetition_penalty") is not None:
            kw["repetition_penalty"] = float(params["repetition_penalty"])
        pad = getattr(self.tokenizer, "pad_token_id", None)
        if pad is not None:
            kw["pad_token_id"] = pad
        stop = params.get("stop") or []
        return kw, [stop] if isinstance(stop, str) else [str(s) for s in stop]

    def _prepare(self, messages: list[Message], where: str) -> tuple[str, list[Any]]:
        conversation, images = to_hf_conversation(
            messages, where, self.max_image_side, self.max_pixels, text_only=self.text_only
        )
        try:
            text = self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # jinja raises its own TemplateError types
            raise ConfigError(f"{self.id}: the chat template failed on {where} ({type(exc).__name__}: {exc})") from exc
        return str(text), images

    def _run_batch(
        self, prepared: list[tuple[str, list[Any]]], gen_kw: dict[str, Any], stops: list[str]
    ) -> list[ModelResponse]:
        torch = _torch()
        texts = [t for t, _ in prepared]
        inputs_kw: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if any(imgs for _, imgs in prepared):
            inputs_kw["images"] = [imgs for _, imgs in prepared] if len(prepared) > 1 else prepared[0][1]
        started = time.perf_counter()
        with self._lock:
            try:
                inputs = self.processor(add_special_tokens=False, **inputs_kw).to(self.model.device)
                pixels = inputs.get("pixel_values")
                if pixels is not None and pixels.is_floating_point() and pixels.dtype != self.model.dtype:
                    inputs["pixel_values"] = pixels.to(self.model.dtype)
                with torch.inference_mode():
                    output = self.model.generate(**inputs, **gen_kw)
            except (RuntimeError, ValueError, TypeError, IndexError) as exc:
                raise ProviderError(
                    f"{self.id}: generation failed on {self.device} ({type(exc).__name__}: {exc}); lower batch_size "
                    "or max_tokens if memory ran out, or check that the messages suit this model"
                ) from exc
        latency = (time.perf_counter() - started) / len(prepared)
        prompt_len = inputs["input_ids"].shape[1]
        new_tokens = output[:, prompt_len:]
        decoded = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        eos = getattr(self.tokenizer, "eos_token_id", None)
        pad = gen_kw.get("pad_token_id")
        responses = []
        for row, text, mask in zip(new_tokens.tolist(), decoded, inputs["attention_mask"].tolist(), strict=True):
            n_new = 0
            for tok in row:
                if tok in (eos, pad):
                    break
                n_new += 1
            out = text.strip()
            for stop in stops:
                if stop and stop in out:
                    out = out[: out.index(stop)].rstrip()
            n_prompt = int(sum(mask))
            usage = {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new}
            responses.append(ModelResponse(text=out, model=self.id, cached=False, usage=usage, latency_s=latency))
        return responses

    # -- provider -------------------------------------------------------------------------------------------

    def _complete_batch(self, batch: Sequence[list[Message]], return_exceptions: bool, params: dict[str, Any]
                        ) -> list[Any]:
        """Answers for `batch`, in input order, run in groups of the same number of images.

        With `return_exceptions`, an item that fails (an unreadable image, a failed generation) holds its
        `CultureKBError` in place of a `ModelResponse`, and the other items still run; bad parameters always
        raise.
        """
        if self.model is None:
            raise ConfigError(f"{self.id}: the client was closed; create a new HFVLMClient")
        gen_kw, stops = self._generation_kwargs(params)
        results: list[ModelResponse | CultureKBError | None] = [None] * len(batch)
        prepared: dict[int, tuple[str, list[Any]]] = {}
        for i, messages in enumerate(batch):
            try:
                prepared[i] = self._prepare(messages, f"batch[{i}]")
            except CultureKBError as exc:
                if not return_exceptions:
                    raise
                results[i] = exc
        groups: dict[int, list[int]] = {}
        for i, item in prepared.items():
            groups.setdefault(len(item[1]), []).append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                try:
                    answered = list(zip(chunk, self._run_batch([prepared[i] for i in chunk], gen_kw, stops),
                                        strict=True))
                except CultureKBError as exc:
                    if not return_exceptions:
                        raise
                    if len(chunk) == 1:
                        results[chunk[0]] = exc
                        continue
                    answered = []
                    for i in chunk:  # find the item that failed; the others still get their answer
                        try:
                            answered.append((i, self._run_batch([prepared[i]], gen_kw, stops)[0]))
                        except CultureKBError as item_exc:
                            results[i] = item_exc
                for i, response in answered:
                    results[i] = response
        return [r for r in results if r is not None]

    async def complete_batch(self, batch: Sequence[list[Message]], *, return_exceptions: bool = False,
                             **params: Any) -> list[Any]:
        """Answers for several conversations at once, in a worker thread (the event loop stays responsive)."""
        return await asyncio.to_thread(self._complete_batch, batch, return_exceptions, params)

    async def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One completion (greedy unless `temperature > 0`), in a worker thread."""
        response: ModelResponse = (await self.complete_batch([messages], **params))[0]
        return response

    def close(self) -> None:
        """Drop the model and free accelerator memory."""
        self.model = None
        if self.device.startswith("cuda"):
            _torch().cuda.empty_cache()

    def __repr__(self) -> str:
        return f"HFVLMProvider(path={self.path!r}, device={self.device!r})"


class HFVLMClient(Model):
    """The one wrapper (`Model`) over an `HFVLMProvider`: what ``make_client("hf:PATH")`` gives, built from one set
    of arguments; implements `ModelClient`. `cache` and `cache_scope` go to the wrapper, the rest to the provider
    (`model`, `processor`, `device`, `text_only` ... are the provider's). `close` drops the model."""

    def __init__(self, path: str | Path, device: str = "cpu", max_new_tokens: int = 128, dtype: Any = None,
                 model: Any = None, processor: Any = None, *, cache: ResponseCache | None = None,
                 cache_scope: str = "", **kw: Any) -> None:
        provider = HFVLMProvider(path, device, max_new_tokens, dtype, model, processor, **kw)
        super().__init__(provider, cache=cache, cache_scope=cache_scope, max_concurrency=1, max_retries=0)
        self.provider: HFVLMProvider = provider

    @property
    def model(self) -> Any:
        """The transformers model (None once closed)."""
        return self.provider.model

    @property
    def processor(self) -> Any:
        """The processor (or tokenizer) it was loaded with."""
        return self.provider.processor

    @property
    def device(self) -> str:
        """The device the model runs on."""
        return self.provider.device

    @property
    def text_only(self) -> bool:
        """Whether the checkpoint has no image processor."""
        return self.provider.text_only

    def __repr__(self) -> str:
        return f"HFVLMClient(path={self.provider.path!r}, device={self.device!r})"


def hf_client_factory(
    argument: str,
    *,
    base_url: str | None = None,
    device: str = "cpu",
    max_new_tokens: int = 128,
    dtype: Any = None,
    batch_size: int = 4,
    max_image_side: int = 1024,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    trust_remote_code: bool = False,
) -> HFVLMProvider:
    """Factory of ``hf:PATH`` (registered as ``hf`` in `culturekb.registry.CLIENTS`): the provider, which
    `make_client` wraps. Server options (timeout_s ...) are not named here, so `make_client` drops them."""
    if not argument:
        raise ConfigError("spec 'hf' needs a local checkpoint path after ':'; expected the form 'hf:PATH'")
    if base_url is not None:
        raise ConfigError(f"hf:{argument} runs the model locally and takes no base_url; drop --base-url")
    return HFVLMProvider(argument, device, max_new_tokens, dtype, batch_size=batch_size,
                         max_image_side=max_image_side, max_pixels=max_pixels, trust_remote_code=trust_remote_code)
