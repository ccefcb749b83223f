"""One `Runner` base for every benchmark: load -> predict (resumable) -> score -> report.

A benchmark is a thin subclass registered by name, so the CLI can do ``culturekb eval NAME``::

    @register_runner("cedar")
    class CedarRunner(Runner):
        command = RunnerCommand(options=cedar_options)     # culturekb eval cedar: the options return a CedarSpec

        @classmethod
        def from_context(cls, ctx: RunContext) -> CedarRunner:  # what the run needs, from its spec, once
            spec = ctx.spec
            samples = load_cedar(spec.data, scheme=spec.scheme)   # the data first: bad rows fail before any model
            predictor = CedarPredictor(spec.scheme, ctx.retriever(), ctx.client())
            return cls(samples, predictor, spec.scheme, limit=spec.limit)

        def load(self) -> list[Sample]:                       # the items (already read by from_context)
            return self.samples

        def default_settings(self) -> list[Setting]:          # orig/know x prompt language
            return Setting.grid(["orig", "know"], self.languages)

        def config(self) -> dict[str, Any]:                    # what makes old predictions stale
            return {**super().config(), "kb_version": self.kb_version}

        def score(self, samples, predictions_by_setting) -> dict[str, Any]:
            ...  # accuracy_by_group, cross_lingual_variance, prediction_propensity, quadrant_bias ...

        def tables(self, results) -> dict[str, Table]: ...    # optional: Markdown tables
        def plots(self, results) -> list[Plot]: ...           # optional: PNGs

`command` (a `RunnerCommand`) is what ``culturekb eval NAME`` offers: a typer-compatible function whose
parameters are the command line's arguments and options and which returns the job's keyword arguments, and the
job that runs the benchmark. The CLI builds one command per registered runner, built-in or plug-in (entry-point
group ``culturekb.runners``), and prints the run's `tables` after it.

The default `predict_chunk` hands each chunk to the `Predictor` given to the constructor as
``predictor.predict(chunk, mode=setting.mode, prompt_language=setting.prompt_language)``. A benchmark whose
settings are not the predictor's modes overrides `predict_chunk` only:

- RICE-VL VQA: settings ``Setting("global")``, ``Setting("sea")``, ``Setting("kb-cues")``; `predict_chunk` builds
  the framing for ``setting.mode`` and calls the model; `record_type` may be a `Prediction` subclass carrying the
  judge's TU/CU/CI, so judge scores are checkpointed with the answers; `score` averages `sea_lave` per
  country and category.
- RICE-VL grounding: one setting; the raw answer (or a `Prediction` subclass with a ``box`` field) is parsed in
  `score`, where `box_iou` gives 0 for an unparseable box, which is counted.

A benchmark whose items finish at different times overrides `predict_stream` instead: it gets every item still to
predict and yields predictions as they finish, in any order, each batch checkpointed as soon as it is yielded.
CoMMET does this: one item is a whole multi-turn story, whose model calls are sequential while stories are played
concurrently, and each story is checkpointed when it ends.

Resuming: after every chunk its predictions are appended to ``<out_dir>/predictions.jsonl`` as
``{"setting": key, "prediction": {...}}`` lines. A rerun into the same folder reads them back and predicts only
the (sample_id, setting) pairs that are missing, plus failed calls (``parse_status == "error"``) unless
``retry_errors=False``; an invalid (unparsable) answer is final and scored wrong. ``<out_dir>/checkpoint.json``
records `config()`; a rerun with a different config (another model, another KB) refuses to mix old and new
predictions unless ``resume=False``, which starts over. A torn last line (a crash in mid-write) is discarded.
``<out_dir>/run.json`` records settings, counts (predicted now / resumed), timings, and the unread answers: how
many answers the parser could not read per setting and prompt language, with their most frequent words
(`culturekb.evals.unread`; the Markdown report and ``culturekb eval`` show them as two tables).

(Why one module over 500 lines: the base class, its checkpoint and resume machinery and the runner registry are one
contract that every benchmark implements; a benchmark's author reads it in one place. The records it passes around,
`Setting`, `RunResult` and `RunnerCommand`, are in `culturekb.evals.run_types`; the failed-share check in
`culturekb.evals.failures`.)
"""

from __future__ import annotations

import json
import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import ValidationError
from tqdm.auto import tqdm

from culturekb import registry
from culturekb._io import atomic_write_json, atomic_write_text, file_mode
from culturekb._runlog import run_log
from culturekb.errors import ConfigError, DataError, ProviderError
from culturekb.evals._calls import client_counts, run_accounting
from culturekb.evals.context import RunContext
from culturekb.evals.data_report import data_tables
from culturekb.evals.reports import Plot, ReportFiles, Table, base_run_header, to_jsonable, write_report
from culturekb.evals.run_types import RunnerCommand, RunResult, Setting
from culturekb.evals.unread import unread_summary, unread_tables
from culturekb.inference.base import Prediction, Predictor
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient

__all__ = [
    "PREDICTIONS_FILE",
    "CHECKPOINT_FILE",
    "RunResult",
    "Runner",
    "RunnerCommand",
    "Setting",
    "get_runner",
    "list_runners",
    "register_runner",
]

logger = logging.getLogger(__name__)

PREDICTIONS_FILE = "predictions.jsonl"
CHECKPOINT_FILE = "checkpoint.json"
_RUN_FILE = "run.json"


class Runner(ABC):
    """Base of every benchmark run; see the module docstring for how to write one."""

    name: ClassVar[str] = ""
    """Set by `register_runner`; also the report's file stem."""
    command: ClassVar[RunnerCommand | None] = None
    """The ``culturekb eval NAME`` command of this benchmark (none: the runner is for library use only)."""
    default_modes: ClassVar[tuple[str, ...]] = ("orig", "know")
    load_report: dict[str, Any] | None = None
    """What loading the data did (`culturekb._records.LoadReport.to_dict`: files, field map, defaults filled,
    skipped rows), set by `from_context`; written into run.json as ``data`` and shown as a table."""
    record_type: ClassVar[type[Prediction]] = Prediction
    """The record read back from the checkpoint; a subclass of `Prediction` may add fields (box, judge scores)."""
    reads_label_words: ClassVar[bool] = False
    """The model's answers are read as label words of a scheme (ArtECulture, Cedar): the report's unread answers
    then say how to add words (``--label-words FILE``)."""
    unread_answers: dict[str, Any] | None = None
    """The unread answers of the last `run` (`culturekb.evals.unread`), which `report` adds to the Markdown."""
    client: ModelClient | None = None
    """The model client the run calls (its predictor's, or its own), given to the constructor (`from_context` takes
    it from ``ctx.client()``); run.json's ``model`` section reports its counters. None: an offline run."""

    def __init__(
        self,
        predictor: Predictor | None = None,
        *,
        client: ModelClient | None = None,
        settings: Sequence[Setting] | None = None,
        chunk_size: int = 32,
        limit: int | None = None,
        progress: bool = True,
        retry_errors: bool = True,
        load_report: Mapping[str, Any] | None = None,
    ) -> None:
        """`client`: the model client the run calls (see the attribute; a subclass may also set ``self.client``
        itself, before or after this call); `load_report`: what loading the data did
        (`culturekb._records.LoadReport.to_dict`), for the report."""
        self.client = client if client is not None else self.client
        self.load_report = dict(load_report) if load_report else None
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be at least 1, got {chunk_size}")
        if limit is not None and limit < 1:
            raise ConfigError(f"limit must be at least 1 (or None for all samples), got {limit}")
        self.predictor = predictor
        self.chunk_size = chunk_size
        self.limit = limit
        self.progress = progress
        self.retry_errors = retry_errors
        self._settings = list(settings) if settings is not None else None

    # -- hooks a benchmark implements or overrides ------------------------------------------------------------

    @abstractmethod
    def load(self) -> list[Sample]:
        """The samples to evaluate, with gold labels."""

    def default_settings(self) -> Sequence[Setting]:
        """Settings when none are passed to the constructor: one per `default_modes`."""
        return [Setting(m) for m in self.default_modes]

    def settings(self) -> list[Setting]:
        """The settings to run: those given to the constructor, else `default_settings()`."""
        chosen = list(self._settings) if self._settings is not None else list(self.default_settings())
        if not chosen:
            raise ConfigError(f"runner {self.label!r} has no settings to run; pass settings=[Setting('orig'), ...]")
        keys = [s.key for s in chosen]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ConfigError(f"runner {self.label!r}: settings repeat the keys {dupes}; give each a distinct name")
        return chosen

    def config(self) -> dict[str, Any]:
        """What the predictions depend on; a checkpoint made under another config is not reused."""
        return {"runner": self.label, "predictor": getattr(self.predictor, "id", None)}

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        """Predictions for one chunk (one per sample, in order). Default: the constructor's `Predictor`."""
        if self.predictor is None:
            raise ConfigError(
                f"runner {self.label!r} was given no predictor; pass a Predictor (such as the offline kb-prior one) "
                "or override predict_chunk"
            )
        return list(self.predictor.predict(samples, mode=setting.mode, prompt_language=setting.prompt_language))

    @abstractmethod
    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Metrics from the samples and, per setting, one prediction per sample in sample order."""

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """Markdown tables for the report (default: none)."""
        return {}

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """PNG plots for the report (default: none)."""
        return []

    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run, the report's first section (`culturekb.evals.reports.RUN_FIELDS`: model, judge, baseline,
        KB and calibration, prompt languages, images sent, unread answers). The base fills in what the runner's
        attributes say (`reports.base_run_header`); a runner overrides it to say what only it knows."""
        return base_run_header(self)

    def report(self, results: Mapping[str, Any], out_dir: Path) -> ReportFiles:
        """Write the report (JSON, Markdown, PNG) from `run_header`, `tables` and `plots`, and the unread answers'
        tables."""
        tables = {**self.tables(results), **unread_tables(self.unread_answers)}
        return write_report(out_dir, self.label, results, tables, self.plots(results),
                            header=self.run_header(results))

    # -- the machinery ---------------------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """The run's name in reports: `name`, or the runner's class name."""
        return self.name or type(self).__name__

    def _load_checked(self) -> list[Sample]:
        samples = list(self.load())
        if self.limit is not None:
            samples = samples[: self.limit]
        if not samples:
            raise DataError(f"runner {self.label!r} loaded no samples; check the data path and split")
        seen: set[str] = set()
        for s in samples:
            if s.id in seen:
                raise DataError(f"runner {self.label!r}: sample id {s.id!r} occurs twice; sample ids must be unique")
            seen.add(s.id)
        return samples

    def _open_checkpoint(self, out_dir: Path, resume: bool) -> dict[tuple[str, str], Prediction]:
        meta_path, pred_path = out_dir / CHECKPOINT_FILE, out_dir / PREDICTIONS_FILE
        config = to_jsonable(self.config())
        if not resume:
            for p in (pred_path, meta_path):
                if p.exists():
                    p.unlink()
        if meta_path.exists():
            try:
                stored = json.loads(meta_path.read_text(encoding="utf-8")).get("config")
            except (json.JSONDecodeError, AttributeError) as exc:
                raise DataError(f"{meta_path}: unreadable checkpoint metadata; delete it or run with resume=False"
                                ) from exc
            if stored != config:
                raise ConfigError(
                    f"{out_dir} holds predictions made under another config ({stored}) than this run ({config}); "
                    "use another output folder, or run with resume=False to start over"
                )
        elif pred_path.exists():
            raise ConfigError(f"{pred_path} exists without {CHECKPOINT_FILE}, so its config is unknown; "
                              "use another output folder or run with resume=False")
        atomic_write_json(meta_path, {"config": config})
        return self._read_predictions(pred_path)

    def _read_predictions(self, path: Path) -> dict[tuple[str, str], Prediction]:
        done: dict[tuple[str, str], Prediction] = {}
        if not path.exists():
            return done
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                pred = self.record_type.model_validate(row["prediction"])
                key = (pred.sample_id, str(row["setting"]))
            except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
                if lineno == len(lines):
                    logger.warning("%s: discarding a torn last line (interrupted write); it will be predicted again",
                                   path)
                    atomic_write_text(path, "".join(x + "\n" for x in lines[:-1]))
                    break
                raise DataError(f"{path}, line {lineno}: not a checkpoint record ({exc}); "
                                "delete the file or run with resume=False") from exc
            done[key] = pred
        return done

    @staticmethod
    def _append(path: Path, setting: Setting, predictions: Sequence[Prediction]) -> None:
        text = "".join(
            json.dumps({"setting": setting.key, "prediction": p.model_dump(mode="json")}, ensure_ascii=False) + "\n"
            for p in predictions
        )
        data = text.encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode())
        try:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:  # a full disk cut the chunk short: take the part back, so every line is whole
                os.ftruncate(fd, start)
                raise
        finally:
            os.close(fd)

    def _check_chunk(self, chunk: Sequence[Sample], preds: Sequence[Prediction], setting: Setting) -> None:
        if len(preds) != len(chunk):
            raise ProviderError(
                f"runner {self.label!r}, setting {setting.key!r}: the predictor returned {len(preds)} predictions "
                f"for {len(chunk)} samples; a predictor must return one per sample and record failures as invalid"
            )
        for s, p in zip(chunk, preds, strict=True):
            if not isinstance(p, self.record_type):
                raise ProviderError(f"runner {self.label!r}: predictor returned a {type(p).__name__} for sample "
                                    f"{s.id!r}; expected {self.record_type.__name__}")
            if p.sample_id != s.id:
                raise ProviderError(
                    f"runner {self.label!r}, setting {setting.key!r}: prediction for {p.sample_id!r} where "
                    f"{s.id!r} was expected; predictions must come in input order"
                )

    def _check_streamed(self, preds: Sequence[Prediction], pending: set[str], setting: Setting) -> None:
        """Each streamed prediction is the runner's record type, for an item still to predict, and comes once."""
        for p in preds:
            if not isinstance(p, self.record_type):
                raise ProviderError(f"runner {self.label!r}: predict_stream yielded a {type(p).__name__} for "
                                    f"{getattr(p, 'sample_id', '?')!r}; expected {self.record_type.__name__}")
            if p.sample_id not in pending:
                raise ProviderError(
                    f"runner {self.label!r}, setting {setting.key!r}: predict_stream yielded a prediction for "
                    f"{p.sample_id!r}, which was not asked for or came twice; yield one prediction per item"
                )
            pending.discard(p.sample_id)

    def _is_done(self, prediction: Prediction | None) -> bool:
        """A checkpointed prediction counts as done unless it is a failed call and `retry_errors` is on."""
        if prediction is None:
            return False
        return not (self.retry_errors and prediction.parse_status == "error")

    def predict(self, samples: Sequence[Sample], setting: Setting, out_dir: Path | None = None,
                done: dict[tuple[str, str], Prediction] | None = None) -> list[Prediction]:
        """One prediction per sample for `setting`, in sample order.

        Samples already in `done` (read from the checkpoint) are not predicted again, except failed calls
        (``parse_status == "error"``) when `retry_errors` is on; invalid answers count as done. The others go to
        `predict_chunk` in chunks of `chunk_size`, each chunk appended to the checkpoint in `out_dir` (if
        given) as soon as it returns, so an interruption loses at most one chunk.
        """
        done = {} if done is None else done
        todo = [s for s in samples if not self._is_done(done.get((s.id, setting.key)))]
        pred_path = out_dir / PREDICTIONS_FILE if out_dir is not None else None
        bar = tqdm(total=len(samples), initial=len(samples) - len(todo), desc=f"{self.label} {setting.key}",
                   unit="sample", disable=not self.progress, leave=True)  # stays as a summary line
        pending = {s.id for s in todo}
        try:
            for preds in self.predict_stream(todo, setting):
                self._check_streamed(preds, pending, setting)
                if pred_path is not None and preds:
                    self._append(pred_path, setting, preds)
                for p in preds:
                    done[(p.sample_id, setting.key)] = p
                bar.update(len(preds))
        finally:
            bar.close()
        if pending:
            raise ProviderError(
                f"runner {self.label!r}, setting {setting.key!r}: no prediction came for {len(pending)} items (first: "
                f"{sorted(pending)[:5]}); predict_stream must yield one prediction per item it is given"
            )
        return [done[(s.id, setting.key)] for s in samples]

    def predict_stream(self, samples: Sequence[Sample], setting: Setting) -> Iterator[Sequence[Prediction]]:
        """The predictions of `samples` (the items still to predict), as batches that `predict` checkpoints as
        soon as each is yielded.

        Default: `predict_chunk` on chunks of `chunk_size`, in order. A runner whose items finish at different
        times (CoMMET: one item is a multi-turn story, stories played concurrently) overrides this to yield each
        item's prediction when it is ready, in any order; `predict` checks that every item gets exactly one.
        """
        for chunk in _chunks(samples, self.chunk_size):
            preds = self.predict_chunk(chunk, setting)
            self._check_chunk(chunk, preds, setting)
            yield preds

    @classmethod
    def from_context(cls, ctx: RunContext) -> Runner:
        """The runner of one run, built from its context (`culturekb.evals.context`): read the data, then ask
        the context for the retriever, the model client, the predictor... Override it to be runnable by
        ``culturekb eval NAME`` through a run spec."""
        raise ConfigError(f"runner {cls.__qualname__} cannot be built from a run spec: give it a `from_context` "
                          "class method (see culturekb.evals.context), or a RunnerCommand job")

    def run(self, out_dir: str | Path, *, resume: bool = True) -> RunResult:
        """Load, predict every setting (resuming from `out_dir`), score, report; write ``run.json`` (and the
        run's log, ``run.log``)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        with run_log(out, f"eval {self.label}"):
            return self._run(out, resume)

    def _run(self, out: Path, resume: bool) -> RunResult:
        timings: dict[str, float] = {}
        t_start = time.perf_counter()

        t0 = time.perf_counter()
        samples = self._load_checked()
        settings = self.settings()
        timings["load"] = time.perf_counter() - t0
        logger.info("%s: %d samples x %d settings", self.label, len(samples), len(settings))

        done = self._open_checkpoint(out, resume)
        client = self.client
        counts_before = client_counts(client)
        by_setting: dict[Setting, list[Prediction]] = {}
        n_predicted: dict[str, int] = {}
        n_resumed: dict[str, int] = {}
        t_pred = time.perf_counter()
        for setting in settings:
            before = sum(1 for s in samples if self._is_done(done.get((s.id, setting.key))))
            t0 = time.perf_counter()
            by_setting[setting] = self.predict(samples, setting, out, done)
            timings[f"predict:{setting.key}"] = time.perf_counter() - t0
            n_resumed[setting.key] = before
            n_predicted[setting.key] = len(samples) - before
        timings["predict"] = time.perf_counter() - t_pred

        t0 = time.perf_counter()
        metrics = self.score(samples, by_setting)
        timings["score"] = time.perf_counter() - t0

        self.unread_answers = unread_summary({s.key: p for s, p in by_setting.items()},
                                             label_words=self.reads_label_words)
        t0 = time.perf_counter()
        files = self.report(metrics, out)
        timings["report"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start

        result = RunResult(
            runner=self.label,
            out_dir=out,
            settings=tuple(settings),
            n_samples=len(samples),
            metrics=metrics,
            predictions={s.key: tuple(p) for s, p in by_setting.items()},
            timings=timings,
            n_predicted=n_predicted,
            n_resumed=n_resumed,
            files=(*files.all(), out / PREDICTIONS_FILE, out / _RUN_FILE),
            tables={**self.tables(metrics), **data_tables(self.load_report), **unread_tables(self.unread_answers)},
            unread_answers=self.unread_answers,
        )
        model = run_accounting(client, counts_before, {s.key: p for s, p in by_setting.items()},
                               _previous_model_section(out / _RUN_FILE))
        data = {"data": self.load_report} if self.load_report else {}
        atomic_write_json(out / _RUN_FILE, to_jsonable({**result.summary(), "config": self.config(), "model": model,
                                                        **data}))
        logger.info("%s: done in %.2fs (%s predicted, %s resumed)", self.label, timings["total"],
                    sum(n_predicted.values()), sum(n_resumed.values()))
        return result


T = TypeVar("T")


def _previous_model_section(path: Path) -> dict[str, Any] | None:
    """The ``model`` section of an earlier run.json in the folder (None when there is none or it is unreadable)."""
    try:
        section = json.loads(path.read_text(encoding="utf-8")).get("model")
    except (OSError, ValueError, AttributeError):
        return None
    return section if isinstance(section, dict) else None


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i: i + size]


# -- registry: culturekb.registry.RUNNERS ------------------------------------------------------------------------

R = TypeVar("R", bound=type[Runner])


def register_runner(name: str, target: type[Runner] | str | None = None, *, replace: bool = False
                    ) -> Callable[[R], R]:
    """Register a runner class under `name`, as a decorator (``@register_runner("cedar")``) or directly with a
    class or a lazy ``"module:Class"`` string (imported on first `get_runner`). Plugins may instead declare an
    entry point in the group ``culturekb.runners``; either way ``culturekb eval NAME`` offers its command."""
    if target is not None:
        _add(name, target, replace)

    def decorate(cls: R) -> R:
        _add(name, cls, replace)
        return cls

    return decorate


def _add(name: str, target: type[Runner] | str, replace: bool) -> None:
    if isinstance(target, type):
        if not issubclass(target, Runner):
            raise ConfigError(f"runner {name!r}: {target.__name__} is not a subclass of culturekb.evals.Runner")
    elif not (isinstance(target, str) and ":" in target):
        raise ConfigError(f"runner {name!r}: register a Runner subclass or a 'module:Class' string, got {target!r}")
    registry.RUNNERS.register(name, target, replace=replace)
    if isinstance(target, type) and not target.__dict__.get("name"):
        target.name = registry.split_spec(name)[0].lower()


def list_runners() -> list[str]:
    """Names `get_runner` accepts (registered ones and installed entry-point plugins), sorted; imports none."""
    return sorted(registry.RUNNERS.names())


def get_runner(name: str) -> type[Runner]:
    """The runner class registered under `name`; unknown names raise `ConfigError` listing the known ones."""
    entry, argument = registry.RUNNERS.entry(name)
    if argument:
        raise ConfigError(f"runner name {name!r} is invalid: a runner takes no value after ':'")
    target = entry.load(registry.RUNNERS.kind)
    if not (isinstance(target, type) and issubclass(target, Runner)):
        raise ConfigError(f"runner {entry.name!r} resolves to {target!r}, not a subclass of culturekb.evals.Runner")
    if not target.__dict__.get("name"):
        target.name = entry.name
    return target
