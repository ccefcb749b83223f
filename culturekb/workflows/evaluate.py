"""The one eval job: any registered benchmark runner, built from its run spec through one `JobContext`.

``culturekb eval NAME`` parses the runner's declared options into its run spec (`culturekb.evals.specs`) and
calls `run_benchmark`, which checks the run folder, builds the context (`culturekb.evals.context.RunContext`)
and lets the runner's ``from_context`` take what it needs. No benchmark has a job of its own here: a new
benchmark is one folder under ``culturekb/evals/`` (or a folder on ``CULTUREKB_BENCHMARKS``, or an entry point).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturekb.errors import ConfigError, RunFailedError
from culturekb.workflows._common import check_base_url, job_settings, response_cache
from culturekb.workflows.data import check_run_out, load_kb_samples

if TYPE_CHECKING:
    from culturekb.builders.pipeline import BuildResult
    from culturekb.config import Settings
    from culturekb.evals.runner import RunResult
    from culturekb.evals.specs import RunSpec
    from culturekb.inference.augmenter import Augmenter
    from culturekb.inference.base import Predictor
    from culturekb.kb.cultures import CultureRegistry
    from culturekb.kb.schema import Sample
    from culturekb.kb.schemes import EmotionScheme
    from culturekb.models.base import ModelClient
    from culturekb.models.cache import ResponseCache
    from culturekb.retrieval.retriever import Retriever
    from culturekb.text.concepts import ConceptExtractor

log = logging.getLogger(__name__)

__all__ = ["JobContext", "run_benchmark", "build_ricevl_cue_kb", "eval_names", "eval_command", "runner_tables"]


class JobContext:
    """The `RunContext` of one run: each service opened on first use, once."""

    def __init__(self, spec: RunSpec, settings: Settings | None = None) -> None:
        self.spec = spec
        self._settings = job_settings(settings)
        self._retrievers: dict[Path | None, Retriever | None] = {}
        self._augmenter: Augmenter | None = None
        self._cache: ResponseCache | None = None
        self._clients: dict[tuple[str, str | None, str | None], ModelClient | None] = {}
        self._cue_kbs: dict[Path, Path] = {}
        self._words: dict[str, dict[str, tuple[str, ...]]] | None = None
        self.data_read: dict[str, Any] = {}

    # -- what the spec says ------------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """See `culturekb.evals.context.RunContext.settings`."""
        return self._settings

    def _get(self, name: str, default: Any = None) -> Any:
        return getattr(self.spec, name, default)

    @property
    def parse_fallback(self) -> bool:
        """See `culturekb.evals.context.RunContext.parse_fallback`."""
        chosen = self._get("parse_fallback")
        return bool(self._settings.parse_fallback if chosen is None else chosen)

    def _label_words(self) -> dict[str, dict[str, tuple[str, ...]]]:
        path = self._get("label_words")
        if path is None:
            return {}
        if self._words is None:
            from culturekb.kb.label_words import load_label_words

            self._words = load_label_words(path)
        return self._words

    def label_scheme(self, scheme: EmotionScheme) -> EmotionScheme:
        """See `culturekb.evals.context.RunContext.label_scheme`."""
        words = self._label_words()
        return scheme.with_words(words, source=str(self._get("label_words"))) if words else scheme

    @property
    def label_words_id(self) -> str:
        """See `culturekb.evals.context.RunContext.label_words_id`."""
        from culturekb.kb.label_words import label_words_digest

        words = self._label_words()
        return f"|label-words:{label_words_digest(words)}" if words else ""

    @property
    def max_concurrency(self) -> int:
        """See `culturekb.evals.context.RunContext.max_concurrency`."""
        return int(self._get("concurrency") or self._settings.max_concurrency)

    @property
    def kb_version(self) -> str:
        """See `culturekb.evals.context.RunContext.kb_version`."""
        retriever = self.retriever()
        return retriever.kb.version if retriever is not None else ""

    # -- knowledge ---------------------------------------------------------------------------------------------
    def kb_samples(self, paths: Sequence[Path]) -> list[Sample]:
        """See `culturekb.evals.context.RunContext.kb_samples`."""
        kb_dir = self._get("kb_dir")
        if kb_dir is None:
            raise ConfigError("this run reads its data with a KB's label scheme; give --kb DIR")
        self.data_read = {}
        return load_kb_samples(kb_dir, paths, data_root=self._get("data_root"), scheme=self._get("scheme"),
                               field_map=self._get("field_map"), on_bad_row=self._get("on_bad_row", "fail"),
                               read=self.data_read)

    def retriever(self, kb_dir: Path | None = None) -> Retriever | None:
        """See `culturekb.evals.context.RunContext.retriever`."""
        kb_dir = kb_dir if kb_dir is not None else self._get("kb_dir")
        if kb_dir not in self._retrievers:
            self._retrievers[kb_dir] = None if kb_dir is None else self._open(kb_dir).retriever
        return self._retrievers[kb_dir]

    def _open(self, kb_dir: Path) -> Augmenter:
        from culturekb.workflows.retrieve import open_augmenter

        augmenter = open_augmenter(kb_dir, self._get("backend"), self._get("embedder"), self._get("tau"),
                                   settings=self._settings, status=self._get("status"))
        if kb_dir == self._get("kb_dir"):
            self._augmenter = augmenter
        return augmenter

    def augmenter(self) -> Augmenter:
        """See `culturekb.evals.context.RunContext.augmenter`."""
        if self._augmenter is None:
            kb_dir = self._get("kb_dir")
            if kb_dir is None:
                raise ConfigError("this run needs a KB; give --kb DIR")
            self._retrievers[kb_dir] = self._open(kb_dir).retriever
        assert self._augmenter is not None
        return self._augmenter

    def cultures(self) -> CultureRegistry:
        """See `culturekb.evals.context.RunContext.cultures`."""
        retriever = self.retriever()
        if retriever is not None:
            return retriever.kb.culture_registry
        from culturekb.kb.cultures import packaged_registry

        return packaged_registry()

    def build_cue_kb(self, metadata: Path, out: Path, *, scheme: str, allow_unknown_countries: bool = False) -> Path:
        """See `culturekb.evals.context.RunContext.build_cue_kb`."""
        if out not in self._cue_kbs:
            build_ricevl_cue_kb(metadata, out, scheme=scheme, embedder=self._get("embedder"),
                                allow_unknown_countries=allow_unknown_countries,
                                cache_dir=self._get("cache_dir") or Path(self.spec.out) / "cache",
                                progress=self.spec.progress)
            self._cue_kbs[out] = out
        return out

    # -- models ------------------------------------------------------------------------------------------------
    def _response_cache(self) -> ResponseCache:
        if self._cache is None:
            self._cache = response_cache(self._get("cache_dir"), self._settings)
        return self._cache

    def client(self, model: str | None = None, *, base_url: str | None = None, scope: str | None = None
               ) -> ModelClient | None:
        """See `culturekb.evals.context.RunContext.client`."""
        from culturekb.evals.context import OFFLINE_MODELS

        model = self.spec.model if model is None else model
        if not model or model in OFFLINE_MODELS:
            return None
        key = (model, base_url, scope)
        if key not in self._clients:
            from culturekb.models.factory import make_client

            self._clients[key] = make_client(
                model, base_url=base_url or self.spec.base_url or self._settings.base_url,
                cache=self._response_cache(), cache_scope=self.kb_version if scope is None else scope,
                max_concurrency=self._settings.max_concurrency)
        return self._clients[key]

    def predictor(self, samples: Sequence[Sample]) -> tuple[Predictor, dict[str, Any] | None]:
        """See `culturekb.evals.context.RunContext.predictor`."""
        from culturekb.inference.predictors import make_predictor
        from culturekb.workflows.calibrate import kb_prior_calibration

        augmenter = self.augmenter()
        calibration: dict[str, Any] | None = None
        if self.spec.model == "kb-prior":
            kw, calibration = kb_prior_calibration(augmenter, samples, self._get("data") or ())
        else:
            kw = {"cache": self._response_cache(), "max_concurrency": self._settings.max_concurrency,
                  "parse_fallback": self.parse_fallback}
        base_url = self.spec.base_url or self._settings.base_url
        predictor = make_predictor(self.spec.model, augmenter, base_url=base_url, **kw)
        scheme = getattr(predictor, "scheme", None)
        if self.spec.model != "kb-prior" and scheme is not None and self._label_words():
            # a predictor that reads a model's answers: its prompts show, and its parser reads, the run's words
            predictor.scheme = self.label_scheme(scheme)  # type: ignore[attr-defined]
            predictor.id += self.label_words_id
        return predictor, calibration

    def image_concepts(self, client: ModelClient | None) -> ConceptExtractor | None:
        """See `culturekb.evals.context.RunContext.image_concepts`."""
        if not self._get("image_concepts") or client is None:
            return None
        from culturekb.builders.concepts import VLMConceptExtractor

        return VLMConceptExtractor(client)


def run_benchmark(name: str, spec: RunSpec, settings: Settings | None = None) -> RunResult:
    """Run the registered benchmark `name` on `spec`: check the run folder, build the context, let the runner take
    what it needs (``Runner.from_context``), run it into ``spec.out``."""
    from culturekb._io import exclusive_lock
    from culturekb.evals.context import OFFLINE_MODELS
    from culturekb.evals.runner import get_runner

    runner_cls = get_runner(name)
    check_base_url(spec.base_url)
    if spec.model and spec.model not in OFFLINE_MODELS and not spec.base_url:
        check_base_url(job_settings(settings).base_url, "the base_url setting (CULTUREKB_BASE_URL, config file)")
    check_run_out(spec.out)
    # one writer per run folder, as for a build: a second run into the same --out is refused at once (exit 2)
    # instead of predicting (and paying for) every item again beside the first one
    # (the folder's real path: `--out .` has a name to lock, and two spellings of one folder share the lock)
    with exclusive_lock(Path(spec.out).resolve(), f"eval {name}",
                        "wait for that run to finish, or give this one another --out"):
        runner = runner_cls.from_context(JobContext(spec, settings))
        return runner.run(spec.out)


def build_ricevl_cue_kb(
    metadata: str | Path, out: str | Path, *, scheme: str = "ricevl14", embedder: str | None = None,
    policy: str = "keep", allow_unknown_countries: bool = False, cache_dir: str | Path | None = None,
    progress: bool = True,
) -> BuildResult:
    """Build the regional cue KB from RICE-VL-style training metadata (JSONL) into `out`; returns the BuildResult."""
    from culturekb.builders.cue_kb import build_cue_kb
    from culturekb.evals.ricevl.data import load_cue_metadata

    samples = load_cue_metadata(metadata, scheme=scheme, allow_unknown_countries=allow_unknown_countries)
    return build_cue_kb(samples, out, scheme=scheme, embedder=embedder or job_settings().embedder, policy=policy,
                        cache_dir=cache_dir, progress=progress)


# -- `culturekb eval NAME`: one command per registered benchmark runner ----------------------------------------
def eval_names() -> list[str]:
    """The benchmarks `culturekb eval` offers: every registered runner, built-in, on CULTUREKB_BENCHMARKS and
    plug-in."""
    from culturekb import registry

    return registry.RUNNERS.names()


def eval_command(name: str) -> Callable[..., RunResult]:
    """The function behind ``culturekb eval NAME``: its parameters are the options the runner declares (typer
    reads them, with their help); called, it builds the run spec and runs the benchmark (`run_benchmark`), or the
    job the runner declares (plug-ins that keep their own)."""
    from culturekb._runlog import log_failure
    from culturekb.evals.failures import MAX_FAILED_SHARE, check_failed_share
    from culturekb.evals.runner import get_runner
    from culturekb.evals.specs import RunSpec
    from culturekb.registry import load_target

    runner = get_runner(name)
    declared = runner.command
    if declared is None:
        raise ConfigError(
            f"benchmark runner {name!r} ({runner.__module__}.{runner.__qualname__}) declares no command line; give "
            "the class `command = RunnerCommand(options=...)` (see culturekb.evals.runner)"
        )
    options = load_target(declared.options, f"the options of runner {name!r}") if isinstance(
        declared.options, str) else declared.options
    job = load_target(declared.job, f"the job of runner {name!r}") if isinstance(declared.job, str) else declared.job

    @functools.wraps(options)
    def command(**values: Any) -> RunResult:
        from culturekb.data.samples import resolve_samples

        share = values.pop(_SHARE_OPTION, MAX_FAILED_SHARE)
        if not 0.0 <= share <= 1.0:  # NaN too; checked before any work
            raise ConfigError(f"--max-failed-share must be a share between 0 and 1 (0.2: a fifth of the items), "
                              f"got {share}")
        given = options(**{k: resolve_samples(v) for k, v in values.items()})  # sample:NAME -> the packaged file
        result: RunResult
        if job is not None:  # keyword arguments, or one value (a run spec) the job takes whole
            result = job(**given) if isinstance(given, Mapping) else job(given)
        elif isinstance(given, RunSpec):
            result = run_benchmark(name, given)
        else:
            kwargs = dict(given) if isinstance(given, Mapping) else {}
            if "out" not in kwargs:
                raise ConfigError(f"runner {name!r}: its options return neither a run spec nor an 'out' (the run "
                                  "folder); return a RunSpec (with from_context on the runner), or the runner's "
                                  "keyword arguments with 'out'")
            out = kwargs.pop("out")
            result = runner(**kwargs).run(out)
        try:
            check_failed_share(result, share)  # the reports are written; a run whose calls mostly failed is no success
        except RunFailedError as exc:
            log_failure(result.out_dir, f"eval {result.runner}", exc)  # its run.log says so too (exit 3)
            raise
        return result

    _add_share_option(command, options)
    return command


_SHARE_OPTION = "max_failed_share"


def _add_share_option(command: Callable[..., Any], options: Callable[..., Any]) -> None:
    """Give every eval command ``--max-failed-share`` (the runner's own options first, then this one)."""
    import inspect
    from typing import Annotated

    import typer

    from culturekb.evals.failures import MAX_FAILED_SHARE

    signature = inspect.signature(options, eval_str=True)
    if _SHARE_OPTION in signature.parameters:
        return
    annotation = Annotated[float, typer.Option(
        help="the share of items (0-1) whose call may fail (no answer: server down or erring, timeouts, garbage, a "
             "missing image) before the run exits with status 3 (its reports are written; a rerun retries them)")]
    given = list(signature.parameters.values())
    var_kw = [p for p in given if p.kind is inspect.Parameter.VAR_KEYWORD]
    params = [*(p for p in given if p.kind is not inspect.Parameter.VAR_KEYWORD),
              inspect.Parameter(_SHARE_OPTION, inspect.Parameter.KEYWORD_ONLY, default=MAX_FAILED_SHARE,
                                annotation=annotation), *var_kw]
    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {**getattr(options, "__annotations__", {}), _SHARE_OPTION: annotation}


def runner_tables(result: RunResult) -> list[str]:
    """The Markdown of each table of a run, title first: what `culturekb eval` prints after a run."""
    from culturekb.evals.reports import render_markdown_table

    return [f"## {table.title}\n\n{render_markdown_table(table)}" for table in result.tables.values()]
