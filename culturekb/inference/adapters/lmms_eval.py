"""lmms-eval (0.7.x) plug-in: a model that wraps any registered lmms-eval model and adds the knowledge block.

    lmms-eval --model culturekb --tasks TASK --model_args \\
        inner_model=qwen2_5_vl,kb=./kb,kb_version=<16 hex digits>,culture=zh,pretrained=Qwen/Qwen2.5-VL-7B-Instruct

Model arguments of the wrapper (every other argument goes to the inner model):

* ``inner_model``: the registered lmms-eval model to wrap (``qwen2_5_vl``, ``openai``, ``llava_hf`` ...);
* ``kb``: the KB directory; ``kb_version``: its version (``manifest.json``), required and checked, because
  lmms-eval's response cache (``--use_cache``) keys answers by the model arguments: with the version in them,
  answers made with one KB are never reused for another;
* ``culture``: the default culture; ``culture_field`` (default ``culture``): the document field with each
  document's culture (``none`` to always use the default); ``concepts_field`` (default ``concepts``);
* ``mode`` (``know``), ``on_unknown_culture`` (``error`` | ``skip``), ``kb_template`` (``harness_knowledge``,
  ``none`` for the bare block), ``kb_backend``, ``kb_embedder``, ``kb_tau`` (default:
  the settings and what the KB's index records);
* ``status``: which tuples are injected: ``all`` (every tuple but rejected ones, pending ones marked unreviewed),
  ``accepted`` (reviewed knowledge only) or ``pending`` (default: the ``status`` setting, ``all``).

Two variants are registered under the one name ``culturekb``: `CultureKBChat` (lmms-eval's default when both
exist) wraps the inner model's chat implementation and puts the block into the first user message that
``doc_to_messages`` builds; `CultureKBSimple` (``--force_simple``) wraps the simple implementation and puts the
block before each request's context. Registration is the ``lmms_eval.models`` entry point (see
`model_manifests`); `register` does the same in-process.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.inference.adapters._common import HARNESS_EXTRA, Injection, KnowledgeInjector, prepend_block

try:
    from lmms_eval.api.instance import Instance
    from lmms_eval.api.model import lmms
except ImportError as exc:  # pragma: no cover - exercised through a subprocess without lmms_eval
    raise MissingExtraError("lmms-eval", HARNESS_EXTRA, "the lmms-eval adapter") from exc

__all__ = ["CultureKBSimple", "CultureKBChat", "model_manifests", "register", "model_args_for", "MODEL_ID"]

logger = logging.getLogger(__name__)

MODEL_ID = "culturekb"


def model_manifests() -> list[Any]:
    """The lmms-eval manifests of the wrapper (the entry point names `culturekb.inference.adapters:lmms_eval_manifests`,
    which returns the same without importing this module)."""
    from culturekb.inference.adapters import lmms_eval_manifests

    return lmms_eval_manifests()


def register() -> None:
    """Register ``culturekb`` in lmms-eval's model registry of this process (what the entry point does)."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    for manifest in model_manifests():
        MODEL_REGISTRY_V2.register_manifest(manifest, overwrite=True)


def model_args_for(kb_dir: str, inner_model: str, inner_args: str = "", **options: Any) -> str:
    """The ``--model_args`` string for a KB: its version looked up, options as ``key=value``."""
    from culturekb.kb.store import KnowledgeBase

    version = KnowledgeBase.load(kb_dir).version
    parts = [f"inner_model={inner_model}", f"kb={kb_dir}", f"kb_version={version}"]
    parts += [f"{k}={v}" for k, v in options.items() if v is not None]
    if inner_args:
        parts.append(inner_args)
    return ",".join(parts)


def _none(value: Any) -> Any:
    return None if isinstance(value, str) and value.strip().lower() in ("", "none", "null") else value


class _CultureKBBase(lmms):
    """Shared by both variants: the injector, the inner model, delegation of what the evaluator reads."""

    _variant = "simple"

    def __init__(
        self,
        inner_model: str | None = None,
        kb: str | None = None,
        kb_version: Any = None,
        culture: str | None = None,
        culture_field: str | None = "culture",
        concepts_field: str | None = "concepts",
        mode: str = "know",
        on_unknown_culture: str = "error",
        kb_template: str | None = "harness_knowledge",
        kb_backend: str | None = None,
        kb_embedder: str | None = None,
        kb_tau: float | None = None,
        status: str | None = None,
        **inner_args: Any,
    ) -> None:
        super().__init__()
        where = f"lmms-eval model '{MODEL_ID}'"
        if not inner_model:
            raise ConfigError(f"{where}: inner_model is required; name the registered lmms-eval model to wrap, "
                              "e.g. --model_args inner_model=qwen2_5_vl,kb=DIR,kb_version=...")
        if not kb:
            raise ConfigError(f"{where}: kb is required; give the KB directory, e.g. kb=./kb")
        if inner_model == MODEL_ID:
            raise ConfigError(f"{where}: inner_model cannot be '{MODEL_ID}' itself")
        self.injector = KnowledgeInjector.open(
            str(kb), backend=_none(kb_backend), embedder=_none(kb_embedder), tau=_none(kb_tau),
            culture=_none(culture), culture_field=_none(culture_field), concepts_field=_none(concepts_field),
            mode=mode, on_unknown_culture=on_unknown_culture,  # type: ignore[arg-type]
            template=_none(kb_template), status=_none(status),
        )
        self.injector.check_version(kb_version, f"{where} (kb={kb})")
        self.kb_version = self.injector.kb_version
        self.inner_model = inner_model
        self.inner = self._make_inner(inner_model, inner_args)
        self.task_dict = self.inner.task_dict  # the evaluator fills ours; the inner model reads its own
        self.injections: dict[tuple[str, str, Any], Injection] = {}
        """What went into each document's requests, by (task, split, doc_id)."""

    def _make_inner(self, name: str, args: dict[str, Any]) -> lmms:
        from lmms_eval.models import get_model, get_model_manifest

        try:
            manifest = get_model_manifest(name)
        except ValueError as exc:
            raise ConfigError(f"inner_model={name!r} is not a registered lmms-eval model ({exc})") from exc
        if self._variant == "chat" and manifest.chat_class_path is None:
            raise ConfigError(
                f"lmms-eval model {name!r} has only a simple implementation, so the chat variant of '{MODEL_ID}' "
                "cannot wrap it; run lmms-eval with --force_simple (selects the simple variant)"
            )
        cls = get_model(name, force_simple=self._variant == "simple")
        return cls(**args)

    # -- what the evaluator and tasks read from a model ------------------------------------------------------
    @property
    def rank(self) -> int:
        return int(self.inner.rank)

    @property
    def world_size(self) -> int:
        return int(self.inner.world_size)

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this wrapper lacks (accelerator, tokenizer, chat_template, batch_sizes ...)
        if name.startswith("__") or name in ("inner", "injector"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def set_cache_hook(self, cache_hook: Any) -> None:
        super().set_cache_hook(cache_hook)
        self.inner.set_cache_hook(cache_hook)

    def clean(self) -> None:
        self.inner.clean()

    # -- knowledge -------------------------------------------------------------------------------------------
    def _doc(self, task: str, split: str, doc_id: Any) -> Any:
        try:
            return self.task_dict[task][split][doc_id]
        except (KeyError, IndexError, TypeError):
            return None

    def _inject(self, keys: Sequence[tuple[str, str, Any]], texts: Sequence[str]) -> list[Injection]:
        """One Injection per (task, split, doc_id), looked up once per document in one batch."""
        todo = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self.injections and key not in todo:
                todo[key] = text
        if todo:
            items = [(self._doc(*k), t, f"task {k[0]!r}, split {k[1]!r}, doc {k[2]}") for k, t in todo.items()]
            for key, inj in zip(todo, self.injector.inject_many(items), strict=True):
                self.injections[key] = inj
        return [self.injections[k] for k in keys]


class CultureKBSimple(_CultureKBBase):
    """Simple variant: the knowledge block goes before each request's context string."""

    is_simple = True
    _variant = "simple"

    def _augmented(self, requests: list[Instance], ctx_pos: int, key_pos: int) -> list[Instance]:
        out: list[Instance] = []
        pending: list[tuple[int, tuple[str, str, Any], str]] = []
        for i, req in enumerate(requests):
            args = req.args
            if len(args) < key_pos + 3 or not isinstance(args[ctx_pos], str) or not args[ctx_pos]:
                continue  # e.g. the unconditional ("", continuation) requests of acc_mutual_info
            doc_id, task, split = args[key_pos], args[key_pos + 1], args[key_pos + 2]
            pending.append((i, (task, split, doc_id), args[ctx_pos]))
        injections = self._inject([k for _, k, _ in pending], [t for _, _, t in pending])
        by_index = {i: inj for (i, _, _), inj in zip(pending, injections, strict=True)}
        for i, req in enumerate(requests):
            inj = by_index.get(i)
            if inj is None or not inj.block:
                out.append(req)
                continue
            args = list(req.args)
            args[ctx_pos] = prepend_block(inj.block, args[ctx_pos])
            new = copy.copy(req)
            new.arguments = tuple(args)
            out.append(new)
        return out

    def generate_until(self, requests: list[Instance]) -> list[Any]:
        """The wrapped model's generations, each context prefixed with its culture's knowledge block."""
        # args: (context, gen_kwargs, doc_to_visual, doc_id, task, split)
        return list(self.inner.generate_until(self._augmented(requests, 0, 3)))

    def generate_until_multi_round(self, requests: list[Instance]) -> list[Any]:
        """The wrapped model's multi-round generations, the first round's context prefixed with the block."""
        # args: (context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, task, split); the first round's context
        return list(self.inner.generate_until_multi_round(self._augmented(requests, 0, 4)))

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """The wrapped model's log-likelihoods of the continuations, each context prefixed with the block."""
        # args: (context, continuation, doc_to_visual, doc_id, task, split)
        return list(self.inner.loglikelihood(self._augmented(requests, 0, 3)))


def _messages_with_block(doc_to_messages: Callable[..., Any], block: str, doc: Any, **kwargs: Any) -> Any:
    """`doc_to_messages` whose first user message starts with the knowledge block (first round only)."""
    result = doc_to_messages(doc, **kwargs)
    if kwargs.get("round_idx") not in (None, 0):
        return result
    if isinstance(result, tuple) and result and isinstance(result[0], list):
        return (_insert_into_messages(result[0], block), *result[1:])
    if isinstance(result, list):
        return _insert_into_messages(result, block)
    return result


def _insert_into_messages(messages: list[Any], block: str) -> list[Any]:
    messages = copy.deepcopy(messages)
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            msg["content"] = prepend_block(block, content)
            return messages
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") == "text":
                    content[j] = {**part, "text": prepend_block(block, str(part.get("text", "")))}
                    return messages
            content.append({"type": "text", "text": block})
            return messages
    logger.warning("no user message to put the knowledge block into; the request goes without it")
    return messages


def _message_text(messages: Any) -> str:
    if isinstance(messages, tuple) and messages and isinstance(messages[0], list):
        messages = messages[0]
    parts: list[str] = []
    for msg in messages if isinstance(messages, list) else []:
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(parts)


class CultureKBChat(_CultureKBBase):
    """Chat variant: the knowledge block goes into the first user message of ``doc_to_messages``."""

    is_simple = False
    _variant = "chat"

    def _augmented(self, requests: list[Instance]) -> list[Instance]:
        # args: (context, doc_to_messages, gen_kwargs, doc_id, task, split)
        keys: list[tuple[str, str, Any]] = []
        texts: list[str] = []
        for req in requests:
            ctx, doc_to_messages, _, doc_id, task, split = req.args
            key = (task, split, doc_id)
            keys.append(key)
            if key in self.injections or (isinstance(ctx, str) and ctx.strip()):
                texts.append(ctx if isinstance(ctx, str) else "")
                continue
            doc = self._doc(*key)  # no context string: the concepts come from the messages' text
            texts.append(_message_text(doc_to_messages(doc)) if doc is not None and callable(doc_to_messages) else "")
        out = []
        for req, inj in zip(requests, self._inject(keys, texts), strict=True):
            if not inj.block:
                out.append(req)
                continue
            ctx, doc_to_messages, *rest = req.args
            new = copy.copy(req)
            new.arguments = (ctx, functools.partial(_messages_with_block, doc_to_messages, inj.block), *rest)
            out.append(new)
        return out

    def generate_until(self, requests: list[Instance]) -> list[Any]:
        """The wrapped model's generations, the block in each conversation's first user message."""
        return list(self.inner.generate_until(self._augmented(requests)))

    def generate_until_multi_round(self, requests: list[Instance]) -> list[Any]:
        """The wrapped model's multi-round generations, the block in the first user message."""
        return list(self.inner.generate_until_multi_round(self._augmented(requests)))

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """Not offered by the chat variant: loglikelihood requests carry no messages; use the simple variant."""
        raise ConfigError(f"'{MODEL_ID}' chat variant: loglikelihood requests need the simple variant; run lmms-eval "
                          "with --force_simple")
