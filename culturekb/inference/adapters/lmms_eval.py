"""lmms-eval (0.7.x) plug-in: a model that wraps any registered lmms-eval model and adds the knowledge block.

    lmms-eval --model culturekb --tasks TASK --output_path out --log_samples --model_args \\
        inner_model=qwen2_5_vl,kb=./kb,culture=zh,prompt_language=en,pretrained=Qwen/Qwen2.5-VL-7B-Instruct

Model arguments of the wrapper are the adapters' shared vocabulary (docs/adapters.md: ``inner_model``, ``kb``,
``kb_version``, ``culture``, ``culture_field``, ``concepts_field``, ``prompt_language``, ``mode``, ``status``,
``template``, ``tau``, ``backend``, ``embedder``, ``on_unknown_culture``, ``sidecar``; the old spellings
``kb_template``, ``kb_tau``, ``kb_backend``, ``kb_embedder`` warn); every other argument goes to the inner model.
``kb_version`` is optional (checked when given); the version is part of the run's identity either way.

What a run leaves in lmms-eval's own outputs (the hooks are installed when this module is imported, and change
only runs of the model ``culturekb``):

* results and samples are filed under ``culturekb_<KB version>_<inner model name>`` (not under the inner
  model's name, beside its baseline runs);
* each logged sample's ``input`` is the prompt actually sent, knowledge block included, and its ``arguments``
  end with a ``{"culturekb": {...}}`` record (culture, concepts, tuple ids, KB version);
* ``culturekb_injections.jsonl`` (one line per document) lies beside the results (``sidecar=PATH`` writes it
  there instead, as the run goes; ``sidecar=none``: none);
* the response cache (``--use_cache``) keys answers by the KB version also when ``kb_version`` is left out.

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
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.inference.adapters._args import DEPRECATED_ALIASES, canonical_args, kb_version_of
from culturekb.inference.adapters._common import HARNESS_EXTRA, Injection, KnowledgeInjector, prepend_block
from culturekb.inference.adapters._sidecar import SidecarWriter, sidecar_path, sidecar_row

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
    """The ``--model_args`` string for a KB: its version looked up, options (the shared vocabulary, e.g.
    ``culture="zh"``) as ``key=value``, then the inner model's own arguments."""
    parts = [f"inner_model={inner_model}", f"kb={kb_dir}", f"kb_version={kb_version_of(kb_dir)}"]
    parts += [f"{k}={v}" for k, v in canonical_args(options, "model_args_for").items()]
    if inner_args:
        parts.append(inner_args)
    return ",".join(parts)


def _none(value: Any) -> Any:
    return None if isinstance(value, str) and value.strip().lower() in ("", "none", "null") else value


_OWN_ARGS = frozenset({"inner_model", "kb", "kb_version", "culture", "culture_field", "concepts_field", "mode",
                       "on_unknown_culture", "template", "backend", "embedder", "tau", "status", "prompt_language",
                       "sidecar", *DEPRECATED_ALIASES})
"""The wrapper's own model arguments; every other one goes to the inner model."""

_LATEST: dict[str, weakref.ref[_CultureKBBase]] = {}
"""The wrapper made last in this process (lmms-eval builds the model, then logs the run's arguments): the tracker
hooks tie it to the run there, and write its sidecar beside that run's results."""

def _parse(model_args: Any) -> dict[str, Any]:
    if isinstance(model_args, dict):
        return dict(model_args)
    from lmms_eval.utils import simple_parse_args_string

    try:
        return dict(simple_parse_args_string(str(model_args or "")))
    except Exception:  # noqa: BLE001 - lmms-eval reports a malformed string itself; the hooks then change nothing
        return {}


def _run_kb_version(args: dict[str, Any]) -> str | None:
    """The KB version of a run from its parsed model arguments (None when the KB cannot be read)."""
    kb = args.get("kb", args.get("kb_dir"))
    if kb is None:
        return None
    try:
        return kb_version_of(str(kb))
    except Exception:  # noqa: BLE001 - the model itself reports an unreadable KB with the fix
        return None


def run_model_name(model_args: Any, inner_name: str) -> str:
    """The name lmms-eval files a ``culturekb`` run under: ``culturekb_<KB version>_<inner model name>``."""
    args = _parse(model_args)
    version = _run_kb_version(args) or "unknown"
    return f"{MODEL_ID}_{version}_{inner_name or args.get('inner_model', 'model')}"


def _install_tracker_hooks() -> None:
    """Make lmms-eval's tracker and response cache aware of ``culturekb`` runs (see the module doc); idempotent,
    and a no-op for every other model."""
    from lmms_eval.caching.response_cache import ResponseCache
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker, GeneralConfigTracker
    from lmms_eval.utils import sanitize_model_name

    if getattr(GeneralConfigTracker, "_culturekb_hooked", False):
        return
    log_args = GeneralConfigTracker.log_experiment_args
    save_samples = EvaluationTracker.save_results_samples
    save_aggregated = EvaluationTracker.save_results_aggregated
    create_cache = ResponseCache.create.__func__  # type: ignore[attr-defined]

    @functools.wraps(log_args)
    def log_experiment_args(self: Any, model_source: Any, model_args: Any, *args: Any, **kwargs: Any) -> None:
        log_args(self, model_source, model_args, *args, **kwargs)
        if model_source == MODEL_ID:
            self._culturekb_model = _LATEST.get("model")
            inner = {k: v for k, v in _parse(model_args).items() if k not in _OWN_ARGS}
            inner_name = GeneralConfigTracker._get_model_name(",".join(f"{k}={v}" for k, v in inner.items()))
            self.model_name = run_model_name(model_args, inner_name)
            self.model_name_sanitized = sanitize_model_name(self.model_name)

    @functools.wraps(save_samples)
    def save_results_samples(self: Any, task_name: str, samples: Any) -> None:
        if self.general_config_tracker.model_source == MODEL_ID:
            for sample in samples:
                arguments = sample.get("arguments") or []
                records = [a[0]["culturekb"] for a in arguments
                           if isinstance(a, list) and len(a) == 1 and isinstance(a[0], dict) and "culturekb" in a[0]]
                if records and arguments and isinstance(records[0].get("prompt"), str):
                    arguments[0] = records[0]["prompt"]  # lmms-eval logs arguments[0] as the sample's input
        save_samples(self, task_name, samples)

    @functools.wraps(save_aggregated)
    def save_results_aggregated(self: Any, *args: Any, **kwargs: Any) -> None:
        save_aggregated(self, *args, **kwargs)
        tracker = self.general_config_tracker
        if self.output_path and tracker.model_source == MODEL_ID:
            ref = getattr(tracker, "_culturekb_model", None)
            model = ref() if ref is not None else None
            if model is not None and model.unwritten:
                SidecarWriter(Path(self.output_path) / tracker.model_name_sanitized).write(model.unwritten)
                model.unwritten = []

    def create(cls: Any, cache_root: str, *, model: str = "", model_args: Any = "", **kwargs: Any) -> Any:
        if model == MODEL_ID:
            args = _parse(model_args)
            if args and args.get("kb_version") in (None, "") and (version := _run_kb_version(args)):
                model_args = {**args, "kb_version": version}  # the KB's version keys the cached answers
        return create_cache(cls, cache_root, model=model, model_args=model_args, **kwargs)

    GeneralConfigTracker.log_experiment_args = log_experiment_args  # type: ignore[method-assign]
    EvaluationTracker.save_results_samples = save_results_samples  # type: ignore[method-assign]
    EvaluationTracker.save_results_aggregated = save_results_aggregated  # type: ignore[method-assign]
    ResponseCache.create = classmethod(create)  # type: ignore[assignment,method-assign]
    GeneralConfigTracker._culturekb_hooked = True  # type: ignore[attr-defined]


_install_tracker_hooks()


class _CultureKBBase(lmms):
    """Shared by both variants: the injector, the inner model, delegation of what the evaluator reads."""

    _variant = "simple"

    def __init__(self, inner_model: str | None = None, kb: str | None = None, kb_version: Any = None,
                 **model_args: Any) -> None:
        super().__init__()
        where = f"lmms-eval model '{MODEL_ID}'"
        own = canonical_args({k: v for k, v in model_args.items() if k in _OWN_ARGS}, where)
        inner_args = {k: v for k, v in model_args.items() if k not in _OWN_ARGS}
        kb = kb if kb is not None else own.pop("kb", None)
        if not inner_model:
            raise ConfigError(f"{where}: inner_model is required; name the registered lmms-eval model to wrap, "
                              "e.g. --model_args inner_model=qwen2_5_vl,kb=DIR")
        if not kb:
            raise ConfigError(f"{where}: kb is required; give the KB directory, e.g. kb=./kb")
        if inner_model == MODEL_ID:
            raise ConfigError(f"{where}: inner_model cannot be '{MODEL_ID}' itself")
        self.injector = KnowledgeInjector.open(
            str(kb), backend=_none(own.get("backend")), embedder=_none(own.get("embedder")),
            tau=_none(own.get("tau")), culture=_none(own.get("culture")),
            culture_field=_none(own.get("culture_field", "culture")),
            concepts_field=_none(own.get("concepts_field", "concepts")), mode=own.get("mode", "know"),
            on_unknown_culture=own.get("on_unknown_culture", "error"),
            template=_none(own.get("template", "harness_knowledge")), status=_none(own.get("status")),
            prompt_language=_none(own.get("prompt_language")),
        )
        self.injector.check_version(kb_version, f"{where} (kb={kb})")
        self.kb_version = self.injector.kb_version
        given = own.get("sidecar")
        self.sidecar_off = given is not None and sidecar_path(str(given)) is None
        self.sidecar = None if given is None or self.sidecar_off else SidecarWriter(str(given))
        """Where rows go as the run goes (``sidecar=PATH``); None: beside the results when lmms-eval saves them."""
        self.unwritten: list[dict[str, Any]] = []
        """Sidecar rows not yet written (no ``sidecar=PATH``: the tracker hook writes them beside the results)."""
        self.inner_model = inner_model
        self.inner = self._make_inner(inner_model, inner_args)
        self.task_dict = self.inner.task_dict  # the evaluator fills ours; the inner model reads its own
        self.injections: dict[tuple[str, str, Any], Injection] = {}
        """What went into each document's requests, by (task, split, doc_id)."""
        _LATEST["model"] = weakref.ref(self)

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
            rows = []
            for key, inj in zip(todo, self.injector.inject_many(items), strict=True):
                self.injections[key] = inj
                rows.append(sidecar_row("lmms-eval", key[2], inj, self.kb_version, {"task": key[0], "split": key[1]}))
            if self.sidecar is not None:
                self.sidecar.write(rows)
            elif not self.sidecar_off:
                self.unwritten += rows
        return [self.injections[k] for k in keys]

    def _record(self, request: Instance, prompt: Any, inj: Injection) -> None:
        """Append what was sent to the evaluator's own request, so its logged sample shows it (after the
        arguments the response cache reads, which stay as they were)."""
        record = {"prompt": prompt, "culture": inj.culture, "concepts": list(inj.concepts),
                  "tuple_ids": list(inj.tuple_ids), "kb_version": self.kb_version}
        request.arguments = (*request.arguments, [{"culturekb": record}])


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
            self._record(req, args[ctx_pos], inj)
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
            self._record(req, prepend_block(inj.block, ctx) if isinstance(ctx, str) and ctx else inj.block, inj)
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
