"""VLMEvalKit (``nvidia-vlmeval``) plug-in: a ``BaseModel`` wrapper that adds the knowledge block in
``build_prompt``, and a runner that registers it in ``supported_VLM`` and runs a dataset.

VLMEvalKit has no plug-in entry point, so the wrapper is registered at run time::

    from culturekb.inference.adapters.vlmevalkit import run_vlmevalkit
    run = run_vlmevalkit("Qwen2-VL-7B-Instruct", "MMBench_DEV_EN", kb="./kb", culture="zh", work_dir="outputs")

`data` is a VLMEvalKit dataset name or the path of a local ``.tsv`` in VLMEvalKit's format (``index``,
``question``, options ``A``, ``B`` ..., ``answer``, ``image`` (base64) or ``image_path``, and optionally the
culture and concepts columns). The model is registered as ``<model>_culturekb_<KB version>``: VLMEvalKit
names its prediction files after the model and reuses them, so the KB version in the name keeps answers made
with one KB from being reused for another.

VLMEvalKit's own ``run.py --config`` cannot build a model it does not ship (``build_model_from_config`` looks
the class up in ``vlmeval.api``/``vlmeval.vlm`` only, and a ``{}`` entry in ``supported_VLM``, filled in the same
process), so `run_config` / ``python -m culturekb.inference.adapters.vlmevalkit --config CFG.json`` registers the
config's ``"class": "CultureKBVLM"`` models first and then calls run.py's ``main``. Every route writes
``culturekb_injections.jsonl`` (one line per prompt) beside the predictions.

Importing ``vlmeval`` switches Python's default HTTPS context to one that does not verify certificates; this
module puts the verifying default back right after the import (so VLMEvalKit's own downloads verify too).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.inference.adapters._args import canonical_args, kb_version_of
from culturekb.inference.adapters._common import HARNESS_EXTRA, Injection, KnowledgeInjector, prepend_block
from culturekb.inference.adapters._sidecar import SidecarWriter, sidecar_path, sidecar_row

try:
    from vlmeval.config import supported_VLM
    from vlmeval.vlm.base import BaseModel
except ImportError as exc:  # pragma: no cover - exercised through a subprocess without vlmeval
    raise MissingExtraError("nvidia-vlmeval", HARNESS_EXTRA, "the VLMEvalKit adapter") from exc
finally:
    if ssl._create_default_https_context is ssl._create_unverified_context:
        ssl._create_default_https_context = ssl.create_default_context

__all__ = ["CultureKBVLM", "register", "run_vlmevalkit", "VLMEvalKitRun", "registered_name", "prepare_config",
           "run_config", "main"]

logger = logging.getLogger(__name__)


def _name_of(model: Any) -> str:
    if isinstance(model, str):
        return model
    if isinstance(model, Mapping):
        return str(model.get("model") or model.get("class") or "model").replace("/", "_")
    base = model.func if isinstance(model, functools.partial) else model
    return str(getattr(base, "__name__", type(base).__name__))


def _make_inner(model: Any, model_kwargs: Mapping[str, Any]) -> tuple[Any, str]:
    """A VLMEvalKit model instance and its name, from a ``supported_VLM`` name, a class/factory or an instance."""
    if isinstance(model, Mapping):
        return _from_class_config(model, model_kwargs)
    if isinstance(model, str):
        if model not in supported_VLM:
            raise ConfigError(f"{model!r} is not a VLMEvalKit model (vlmeval.config.supported_VLM); use one of its "
                              "names, or pass a BaseModel instance or factory")
        return supported_VLM[model](**model_kwargs), model
    if isinstance(model, BaseModel) or (hasattr(model, "generate") and not callable(model)):
        if model_kwargs:
            raise ConfigError("model_kwargs are for a model given by name or factory, not for a model instance")
        return model, _name_of(model)
    if callable(model):
        return model(**model_kwargs), _name_of(model)
    raise ConfigError(f"model must be a supported_VLM name, a BaseModel or a factory, got {type(model).__name__}")


def _from_class_config(config: Mapping[str, Any], model_kwargs: Mapping[str, Any]) -> tuple[Any, str]:
    """A model from a run.py-style entry ``{"class": "GPT4V", "model": ..., "api_base": ...}`` (a class of
    ``vlmeval.api`` or ``vlmeval.vlm``), named after its ``model`` argument or class."""
    import vlmeval.api
    import vlmeval.vlm

    args = {**dict(config), **dict(model_kwargs)}
    cls_name = args.pop("class", None)
    if not isinstance(cls_name, str):
        raise ConfigError('an inner model given as a dict needs "class" (a class of vlmeval.api or vlmeval.vlm, e.g. '
                          '{"class": "GPT4V", "model": "gpt-4o-mini", "api_base": "http://HOST/v1/chat/completions"})')
    cls = getattr(vlmeval.api, cls_name, None) or getattr(vlmeval.vlm, cls_name, None)
    if cls is None:
        raise ConfigError(f"class {cls_name!r} is in neither vlmeval.api nor vlmeval.vlm; use one of their classes "
                          "(GPT4V for any OpenAI-compatible server)")
    return cls(**args), str(args.get("model") or cls_name).replace("/", "_")


class CultureKBVLM(BaseModel):
    """Any VLMEvalKit model with the culture's knowledge block before the text of each prompt.

    `model`: a ``supported_VLM`` name, a factory, a ``BaseModel`` instance (built with `model_kwargs`) or a
    run.py-style dict ``{"class": "GPT4V", "model": ..., "api_base": "http://HOST/v1/chat/completions"}``.
    `kb`: the KB directory (or `injector`: a ready `KnowledgeInjector`); `kb_version`: when given, checked
    against the KB. `culture`, `culture_field`, `concepts_field`, `mode`, `on_unknown_culture`, `template`,
    `prompt_language`: see `KnowledgeInjector` (the adapters' shared vocabulary, docs/adapters.md; the old
    spellings ``kb_dir``, ``kb_template``, ``kb_tau``, ``kb_backend``, ``kb_embedder`` warn); `status`: which
    tuples are injected (``all``, ``accepted``, ``pending``; default: the ``status`` setting, ``all``).
    `question_field`: the column whose text the concepts are extracted from when the row has no concepts
    (default ``question``; the prompt's text when the column is missing). `sidecar`: a folder or ``.jsonl`` path
    that gets one line per prompt (``culturekb_injections.jsonl``); `run_vlmevalkit` and `run_config` set it
    beside the predictions.
    """

    def __init__(
        self,
        model: Any,
        kb: str | Path | None = None,
        *,
        injector: KnowledgeInjector | None = None,
        kb_version: str | None = None,
        culture: str | None = None,
        culture_field: str | None = "culture",
        concepts_field: str | None = "concepts",
        question_field: str = "question",
        mode: str = "know",
        on_unknown_culture: str = "error",
        template: str | None = "harness_knowledge",
        backend: str | None = None,
        embedder: str | None = None,
        tau: float | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        status: str | None = None,
        prompt_language: str | None = None,
        sidecar: str | Path | None = None,
        **deprecated: Any,
    ) -> None:
        super().__init__()
        old = canonical_args(deprecated, "CultureKBVLM")
        unknown = sorted(set(old) - {"kb", "template", "tau", "backend", "embedder"})
        if unknown:
            raise ConfigError(f"CultureKBVLM: unknown argument(s) {unknown}; see docs/adapters.md for the arguments")
        kb = kb if kb is not None else old.get("kb")
        template = old.get("template", template)
        tau, backend, embedder = old.get("tau", tau), old.get("backend", backend), old.get("embedder", embedder)
        if injector is None:
            if kb is None:
                raise ConfigError("CultureKBVLM needs a KB directory (kb=DIR) or an injector")
            injector = KnowledgeInjector.open(
                kb, backend=backend, embedder=embedder, tau=tau, culture=culture, culture_field=culture_field,
                concepts_field=concepts_field, mode=mode, on_unknown_culture=on_unknown_culture,  # type: ignore[arg-type]
                template=template, status=status, prompt_language=prompt_language,
            )
        elif status is not None and status != injector.status:
            raise ConfigError(f"CultureKBVLM: status={status!r} but the given injector serves "
                              f"status={injector.status!r}; pass status to the injector, or leave it out here")
        injector.check_version(kb_version, "CultureKBVLM")
        self.sidecar = SidecarWriter(sidecar) if sidecar_path(sidecar) is not None else None  # type: ignore[arg-type]
        self.injector = injector
        self.question_field = question_field
        self.inner, self.inner_name = _make_inner(model, model_kwargs or {})
        # what VLMEvalKit reads from a model to choose its code path
        self.is_api = bool(getattr(self.inner, "is_api", False))
        self.INTERLEAVE = bool(getattr(self.inner, "INTERLEAVE", False))
        self.VIDEO_LLM = bool(getattr(self.inner, "VIDEO_LLM", False))
        self.allowed_types = list(getattr(self.inner, "allowed_types", BaseModel.allowed_types))
        self._datasets: dict[str, Any] = {}
        self.injections: dict[tuple[str, str], Injection] = {}
        """What went into each row's prompt, by (dataset name, row index)."""

    @property
    def kb_version(self) -> str:
        """Version of the KB the knowledge blocks come from."""
        return self.injector.kb_version

    def bind_dataset(self, dataset: Any) -> None:
        """Give the wrapper the dataset object whose ``build_prompt`` makes the default prompt (the runner does;
        otherwise the wrapper builds the dataset by name on first use)."""
        self._datasets[dataset.dataset_name] = dataset

    def _dataset(self, name: str) -> Any:
        if name not in self._datasets:
            from vlmeval.dataset import build_dataset

            ds = build_dataset(name)
            if ds is None:
                raise ConfigError(f"VLMEvalKit could not build dataset {name!r}; bind it with bind_dataset(dataset)")
            self._datasets[name] = ds
        return self._datasets[name]

    # -- prompts -----------------------------------------------------------------------------------------------
    def use_custom_prompt(self, dataset: str) -> bool:
        """Always True, so that VLMEvalKit calls `build_prompt`, where the knowledge block goes in."""
        return True  # always: build_prompt is where the knowledge goes in

    def build_prompt(self, line: Any, dataset: str | None = None) -> list[dict[str, Any]]:
        """The inner model's (or dataset's) prompt for `line`, with the culture's knowledge block before its text."""
        name = dataset or ""
        if hasattr(self.inner, "use_custom_prompt") and self.inner.use_custom_prompt(name):
            message = self.inner.build_prompt(line, dataset=name)
        else:
            message = self._dataset(name).build_prompt(line)
        message = self.preproc_content(message) or message  # str and list-of-str messages as list of dicts
        doc = _as_mapping(line)
        index = str(doc.get("index", "?"))
        question = doc.get(self.question_field)
        text = question if isinstance(question, str) and question.strip() else _message_text(message)
        inj = self.injector.inject_many([(doc, text, f"dataset {name!r}, index {index}")])[0]
        self.injections[(name, index)] = inj
        if self.sidecar is not None:
            self.sidecar.write([sidecar_row("vlmevalkit", index, inj, self.kb_version, {"dataset": name})])
        return _with_block(message, inj.block)

    # -- generation: the inner model's own code path (retries, threads, interleaving) ----------------------------
    def set_dump_image(self, dump_image_func: Callable[..., Any]) -> None:
        """Set the image dump function here and on the inner model."""
        super().set_dump_image(dump_image_func)
        if hasattr(self.inner, "set_dump_image"):
            self.inner.set_dump_image(dump_image_func)

    def generate(self, message: Any, dataset: str | None = None) -> Any:
        """Delegates to the inner model (the knowledge is already in the message)."""
        return self.inner.generate(message=message, dataset=dataset)

    def generate_inner(self, message: Any, dataset: str | None = None) -> Any:
        """Delegates to the inner model."""
        return self.inner.generate_inner(message, dataset)

    def chat_inner(self, message: Any, dataset: str | None = None) -> Any:
        """Multi-turn chat through the inner model, when it has one."""
        if not hasattr(self.inner, "chat_inner"):
            raise ConfigError(f"VLMEvalKit model {self.inner_name} has no multi-turn chat")
        return self.inner.chat_inner(message, dataset=dataset)


def _as_mapping(line: Any) -> Mapping[str, Any]:
    if isinstance(line, Mapping):
        return line
    if hasattr(line, "to_dict"):
        return dict(line.to_dict())
    raise ConfigError(f"a VLMEvalKit row must be a pandas Series or a dict, got {type(line).__name__}")


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    return "\n".join(str(m.get("value", "")) for m in message if isinstance(m, dict) and m.get("type") == "text")


def _with_block(message: Any, block: str) -> Any:
    """The message with the block before its first text item (a text item of its own when it has none)."""
    if not block:
        return message
    if isinstance(message, str):
        return prepend_block(block, message)
    out = [dict(m) for m in message]
    for m in out:
        if m.get("type") == "text":
            m["value"] = prepend_block(block, str(m.get("value", "")))
            return out
    return [*out, {"type": "text", "value": block}]


def registered_name(inner_name: str, kb_version: str) -> str:
    """The ``supported_VLM`` name of a wrapped model: the inner name and the KB version."""
    return f"{inner_name}_culturekb_{kb_version}"


def register(model: Any, kb: str | Path, name: str | None = None, **options: Any) -> str:
    """Register the wrapped model in ``vlmeval.config.supported_VLM`` and return its name.

    `options` go to `CultureKBVLM`. The name defaults to `registered_name` (model name + KB version).
    """
    version = kb_version_of(kb)
    name = name or registered_name(_name_of(model), version)
    supported_VLM[name] = functools.partial(CultureKBVLM, model, kb, kb_version=version, **options)
    return name


@dataclass
class VLMEvalKitRun:
    """What `run_vlmevalkit` made: the registered model name, the predictions file and VLMEvalKit's scores."""

    model_name: str
    dataset: str
    kb_version: str
    result_file: Path
    scores: list[dict[str, Any]] | None
    injections: dict[str, Injection] = field(default_factory=dict)

    @property
    def with_knowledge(self) -> int:
        """How many prompts got a non-empty knowledge block."""
        return sum(bool(i.block) for i in self.injections.values())


@contextlib.contextmanager
def _lmu_data_root(data: str | Path, work_dir: Path) -> Iterator[str]:
    """The dataset name to build; a local .tsv is linked into a data root of its own under `work_dir`."""
    path = Path(data)
    if path.suffix.lower() != ".tsv":
        yield str(data)
        return
    if not path.is_file():
        raise ConfigError(f"dataset file {path} does not exist; give a VLMEvalKit dataset name or an existing .tsv")
    root = work_dir / "LMUData"
    root.mkdir(parents=True, exist_ok=True)
    link = root / path.name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(path.resolve())
    old = os.environ.get("LMUData")
    os.environ["LMUData"] = str(root)
    try:
        yield path.stem
    finally:
        if old is None:
            os.environ.pop("LMUData", None)
        else:
            os.environ["LMUData"] = old


def run_vlmevalkit(
    model: Any,
    data: str | Path,
    kb: str | Path,
    *,
    work_dir: str | Path = "outputs",
    judge: str = "exact_matching",
    evaluate: bool = True,
    nproc: int = 1,
    name: str | None = None,
    **options: Any,
) -> VLMEvalKitRun:
    """Register the wrapped model, predict every row of `data`, and score with the dataset's own evaluation.

    `model`: a ``supported_VLM`` name, factory or ``BaseModel``; `data`: a dataset name or a local ``.tsv``;
    `judge`: VLMEvalKit's judge for MCQ answers (``exact_matching`` runs offline); `evaluate=False` stops after
    the predictions (for datasets VLMEvalKit cannot score). `options` go to `CultureKBVLM` (culture,
    culture_field, concepts_field, mode, on_unknown_culture, template, status, model_kwargs ...). Predictions go to
    ``<work_dir>/<registered name>/<registered name>_<dataset>.xlsx`` and are reused by a rerun with the same KB;
    ``culturekb_injections.jsonl`` beside them has one line per prompt (what was injected).
    """
    from vlmeval.dataset import build_dataset
    from vlmeval.inference import infer_data_job

    work = Path(work_dir).resolve()
    with _lmu_data_root(data, work) as dataset_name:
        preview = name or registered_name(_name_of(model), kb_version_of(kb))
        options.setdefault("sidecar", work / preview)
        model_name = register(model, kb, name=name, **options)
        dataset = build_dataset(dataset_name)
        if dataset is None:
            raise ConfigError(f"VLMEvalKit could not build dataset {dataset_name!r}: it is neither a supported dataset "
                              "nor a .tsv with a 'question' column")
        wrapped = supported_VLM[model_name]()
        wrapped.bind_dataset(dataset)
        pred_root = work / model_name
        pred_root.mkdir(parents=True, exist_ok=True)
        infer_data_job(model=wrapped, work_dir=str(pred_root), model_name=model_name, dataset=dataset,
                       api_nproc=nproc)
        result_file = pred_root / f"{model_name}_{dataset.dataset_name}.xlsx"
        scores = None
        if evaluate:
            try:
                raw = dataset.evaluate(str(result_file), model=judge, nproc=nproc)
            except NotImplementedError as exc:
                raise ConfigError(f"VLMEvalKit has no evaluation for dataset {dataset.dataset_name!r}; run with "
                                  f"evaluate=False to keep the predictions in {result_file}") from exc
            scores = _records(raw)
    injections = {idx: inj for (ds, idx), inj in wrapped.injections.items() if ds == dataset.dataset_name}
    logger.info("VLMEvalKit run %s on %s: %d prompts, %d with knowledge", model_name, dataset.dataset_name,
                len(injections), sum(bool(i.block) for i in injections.values()))
    return VLMEvalKitRun(model_name, dataset.dataset_name, wrapped.kb_version, result_file, scores, injections)


def _records(raw: Any) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    if hasattr(raw, "to_dict"):
        return list(raw.to_dict(orient="records"))
    if isinstance(raw, Mapping):
        return [dict(raw)]
    return [{"score": raw}]


def _load_config(config: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in config.items()}
    import json

    path = Path(config)
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"VLMEvalKit config {path} does not exist; give the path of a run.py config JSON") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"VLMEvalKit config {path} is not valid JSON ({exc}); fix the file") from exc
    if not isinstance(loaded, dict) or not isinstance(loaded.get("model"), dict) or not isinstance(
            loaded.get("data"), dict):
        raise ConfigError(f'VLMEvalKit config {path}: expected an object with "model" and "data" objects '
                          "(VLMEvalKit's run.py --config format)")
    return loaded


def prepare_config(config: str | Path | Mapping[str, Any], work_dir: str | Path) -> dict[str, Any]:
    """A run.py config whose ``"class": "CultureKBVLM"`` models are registered in ``supported_VLM``.

    Each such entry (its other keys are `CultureKBVLM`'s arguments: ``model`` (a ``supported_VLM`` name or a
    ``{"class": "GPT4V", ...}`` dict), ``kb``, ``culture`` ...) is registered under its key plus
    ``_culturekb_<KB version>`` (so predictions of another KB are never reused) with its sidecar in
    ``<work_dir>/<that name>/``, and left in the returned config as ``{}`` (run.py's shortcut for a registered
    model). Other entries are kept as they are.
    """
    cfg = _load_config(config)
    models: dict[str, Any] = {}
    for key, entry in cfg["model"].items():
        if not isinstance(entry, Mapping) or entry.get("class") != "CultureKBVLM":
            models[key] = entry
            continue
        args = canonical_args({k: v for k, v in entry.items() if k != "class"}, f"VLMEvalKit config model {key!r}")
        if "model" not in args or "kb" not in args:
            raise ConfigError(f'VLMEvalKit config model {key!r}: "class": "CultureKBVLM" needs "model" (the inner '
                              'model: a supported_VLM name or {"class": "GPT4V", ...}) and "kb" (the KB directory)')
        version = kb_version_of(args["kb"])
        if args.get("kb_version") not in (None, version):
            raise ConfigError(f"VLMEvalKit config model {key!r}: kb_version={args['kb_version']} does not match the "
                              f"KB, whose version is {version}; use {version} or leave kb_version out")
        name = key if version in key else f"{key}_culturekb_{version}"
        args.setdefault("sidecar", str(Path(work_dir) / name))
        args["kb_version"] = version
        supported_VLM[name] = functools.partial(CultureKBVLM, **args)
        models[name] = {}
    return {**cfg, "model": models}


def run_config(config: str | Path | Mapping[str, Any], work_dir: str | Path = "./outputs",
               run_args: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Run VLMEvalKit's own ``run.py`` on a config JSON that may name ``"class": "CultureKBVLM"`` models.

    VLMEvalKit has no plug-in entry point, so run.py alone cannot build a model it does not ship; this registers
    the wrappers first (`prepare_config`), writes the rewritten config to ``<work_dir>/culturekb_config.json``
    and calls run.py's ``main`` in this process with ``--config`` and ``--work-dir`` plus `run_args` (e.g.
    ``["--mode", "infer"]`` or ``["--judge", "exact_matching"]``). Returns the rewritten config.
    """
    import json
    import sys

    from vlmeval import run as vlmeval_run

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    prepared = prepare_config(config, work)
    written = work / "culturekb_config.json"
    written.write_text(json.dumps(prepared, indent=2, ensure_ascii=False), encoding="utf-8")
    argv = sys.argv
    sys.argv = ["run.py", "--config", str(written), "--work-dir", str(work), *run_args]
    try:
        vlmeval_run.main()
    finally:
        sys.argv = argv
    return prepared


def main(argv: list[str] | None = None) -> int:
    """``python -m culturekb.inference.adapters.vlmevalkit --config CFG.json [run.py options]``: run.py with the
    config's ``CultureKBVLM`` models registered (see `run_config`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m culturekb.inference.adapters.vlmevalkit",
                                     description="VLMEvalKit's run.py with culturekb's CultureKBVLM registered")
    parser.add_argument("--config", required=True, help="run.py config JSON (models may use class CultureKBVLM)")
    parser.add_argument("--work-dir", default="./outputs", help="output folder (run.py's --work-dir)")
    known, rest = parser.parse_known_args(argv)
    try:
        run_config(known.config, known.work_dir, rest)
    except ConfigError as exc:
        logger.error("%s", exc)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line face of run_config
    raise SystemExit(main())
