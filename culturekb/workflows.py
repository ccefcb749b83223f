"""High-level jobs that the CLI, the API, the notebook and scripts call: load data, build, inspect, review, index,
lookup, predict, evaluate, demo.

This module is the jobs layer of docs/architecture.md: the faces (CLI, HTTP) reach builders, retrieval, inference
and evals only through it. (Why one module over 500 lines: each job is a thin function that assembles parts from
the layers below, and one module keeps the faces' single entry point in one place.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import ValidationError

from culturekb._io import exclusive_lock
from culturekb.config import Settings
from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import Sample

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from culturekb.builders.pipeline import BuildResult
    from culturekb.evals.runner import RunResult
    from culturekb.evals.specs import (
        ArtECultureSpec,
        CedarSpec,
        CommetSpec,
        CulturalToMSpec,
        KnowledgeSpec,
        ParseSpec,
        RetrievalSpec,
        RiceVLGroundingSpec,
        RiceVLVQASpec,
    )
    from culturekb.inference.augmenter import Augmenter
    from culturekb.inference.base import Prediction
    from culturekb.kb.calibration import Calibration
    from culturekb.kb.cultures import Culture
    from culturekb.kb.schemes import EmotionScheme
    from culturekb.kb.store import KnowledgeBase
    from culturekb.models.base import Embedder, ModelClient
    from culturekb.models.cache import ResponseCache
    from culturekb.retrieval.retriever import Retriever
    from culturekb.text.concepts import ConceptExtractor

__all__ = [
    "KBInspection",
    "IndexSummary",
    "LookupRow",
    "load_data",
    "load_kb_samples",
    "build_from_files",
    "inspect_kb",
    "apply_review",
    "export_review",
    "render_build_report",
    "demo_data_files",
    "index_kb",
    "open_augmenter",
    "lookup_concepts",
    "compare_kb",
    "ComparisonPage",
    "kb_label_prior",
    "predict_job",
    "eval_artemculture",
    "eval_knowledge",
    "eval_cedar",
    "build_ricevl_cue_kb",
    "eval_ricevl_vqa",
    "eval_ricevl_grounding",
    "eval_commet",
    "eval_culturaltom",
    "eval_names",
    "eval_command",
    "runner_tables",
]



class KBInspection(TypedDict):
    """What `inspect_kb` gives: the loaded KB, JSON-ready stats and divergence, and the same as Markdown."""

    kb: KnowledgeBase
    json: dict[str, Any]
    markdown: str


class IndexSummary(TypedDict):
    """What `index_kb` gives: the index built for a KB version, its backend, embedder and size."""

    kb_version: str
    backend: str
    embedder: str
    embedder_spec: str
    count: int
    directory: str


class LookupRow(TypedDict):
    """One row of `lookup_concepts`: the query, its match (None when nothing passed tau) and the status filter
    that served it."""

    query: str
    match: dict[str, Any] | None
    status_filter: str


def load_data(
    paths: Sequence[str | Path],
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "artemis9",
    cultures: Sequence[str] | None = None,
    seed: int = 0,
) -> tuple[list[Sample], dict[str, Any]]:
    """Read CSV/JSONL files into samples; images without a split get the deterministic 8:1:1 split by image."""
    from culturekb.kb.artemis import split_by_image
    from culturekb.kb.loaders import load_artemis_csv, load_samples_jsonl

    if not paths:
        raise DataError("no data files given; pass at least one CSV or JSONL file")
    samples: list[Sample] = []
    dropped: dict[str, int] = {}
    sources = []
    for p in map(Path, paths):
        check_data_file(p)
        if p.suffix.lower() == ".csv":
            res = load_artemis_csv(p, data_root=data_root, scheme=scheme, cultures=cultures)
        elif p.suffix.lower() in (".jsonl", ".ndjson"):
            res = load_samples_jsonl(p, data_root=data_root, scheme=scheme, cultures=cultures)
        else:
            raise DataError(f"{p}: unknown data format {p.suffix!r}; use an ArtEmis/ArtELingo .csv or a sample .jsonl")
        samples.extend(res.samples)
        for c, n in res.dropped_no_majority.items():
            dropped[c] = dropped.get(c, 0) + n
        sources.append(res.summary())
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"sample id {dup!r} appears in more than one input file; give each file distinct images")
    samples = split_by_image(samples, seed=seed)
    return samples, {"sources": sources, "dropped_no_majority": dropped}


def check_data_file(path: str | Path) -> Path:
    """`path` as a Path when it is an existing file; a folder or a missing path raises DataError saying which."""
    p = Path(path)
    if p.is_dir():
        raise DataError(f"data file {p} is a directory; expected a file (give the path of a CSV or JSONL file in it)")
    if not p.is_file():
        raise DataError(f"data file {p} does not exist; check the path")
    return p


def check_run_out(out: str | Path) -> Path:
    """`out` as a Path when a run folder may be made there (a new path or a folder); an existing file raises
    DataError. Nothing is created here: the runner makes the folder once inputs and models are ready."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise DataError(f"--out {p} is a file; a run's reports go in a folder: choose a new folder or an earlier "
                        "run's folder (to resume it)")
    return p


def build_from_files(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    data_root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    settings_file: str | Path | None = None,
    progress: bool = True,
    cultures_file: str | Path | None = None,
    loaded_embedder: Embedder | None = None,
    **options: Any,
) -> BuildResult:
    """Load the data files and build a KB into `out` (see `BuildConfig` for the options).

    `cultures_file` (JSON or TOML, `culturekb.kb.cultures.load_cultures_file`) names cultures, adds aliases and
    sets languages and Western flags before the data is read; the KB's manifest keeps them. `loaded_embedder`: the
    model of the `embedder` option, already loaded (the build then loads no copy of its own)."""
    from culturekb._runlog import run_log
    from culturekb.builders.pipeline import BuildConfig, build_kb, make_components
    from culturekb.config import load_settings
    from culturekb.kb.card import describe_sources
    from culturekb.kb.cultures import declare_cultures, load_cultures_file
    from culturekb.kb.store import check_kb_target

    settings = load_settings(settings_file, cache_dir=cache_dir, base_url=options.get("base_url"))
    opts = {k: v for k, v in options.items() if v is not None}
    opts.setdefault("embedder", settings.embedder)
    opts.setdefault("max_concurrency", settings.max_concurrency)
    if settings.base_url:
        opts["base_url"] = settings.base_url
    try:
        config = BuildConfig(**opts)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ConfigError(f"invalid build option {'.'.join(map(str, e['loc']))}: {e['msg']}") from exc
    check_kb_target(out)  # before anything is read or loaded: a wrong --out is refused at once, not after the build
    for p in paths:
        check_data_file(p)
    if cultures_file is not None:
        declare_cultures(load_cultures_file(cultures_file))
    samples, load_report = load_data(paths, data_root=data_root, scheme=config.scheme, cultures=config.cultures)
    # inputs are valid; one build per --out at a time: a second one is refused (exit 2) before any model loads,
    # not left to race the first one's save
    with exclusive_lock(out, "build", "wait for that build to finish, or give this one another --out"), \
            run_log(out, "build", atomic=True):  # the KB folder gets the build's run.log
        components = (make_components(config, loaded_embedder, cache_dir=settings.cache_dir)
                  if loaded_embedder is not None else None)
        return build_kb(samples, config, out=out, cache_dir=settings.cache_dir, progress=progress,
                        components=components,
                        extra_report={"dropped_no_majority": load_report["dropped_no_majority"],
                                      "sources": describe_sources(paths, load_report["sources"])})  # KB card


def inspect_kb(path: str | Path, top: int = 10) -> KBInspection:
    """Stats per culture and the most divergent concepts, as JSON-ready data and as Markdown."""
    from culturekb.kb.stats import divergence, kb_stats, render_stats_markdown
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(path)
    stats = kb_stats(kb)
    divs = divergence(kb, top=top)
    return {
        "kb": kb,
        "json": {"kb_version": kb.version, "stats": stats, "divergence": [_plain(d) for d in divs]},
        "markdown": f"# KB {kb.version} ({kb.scheme.name})\n\n" + render_stats_markdown(stats, divs),
    }


def _plain(obj: Any) -> Any:
    import dataclasses

    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else obj


def kb_info(kb_dir: str | Path) -> dict[str, Any]:
    """What `culturekb kb info` shows: version, scheme, cultures with tuples by review status, judges and their
    kappa, the card's path (None when the KB has none) and the ready-to-paste harness arguments
    (`culturekb.inference.adapters.harness_args_for`: lmms-eval model_args, inspect_ai -S args, VLMEvalKit
    kwargs)."""
    from culturekb.inference.adapters import harness_args_for
    from culturekb.kb.card import CARD, card_facts, read_report
    from culturekb.kb.store import KnowledgeBase

    directory = Path(kb_dir)
    kb = KnowledgeBase.load(directory)
    facts = card_facts(kb, read_report(directory))
    card = directory / CARD
    return {
        "kb_dir": str(directory),
        **{k: facts[k] for k in ("kb_version", "label_scheme", "labels", "tuples", "concepts", "cultures", "review",
                                 "judges", "sources")},
        "card": str(card) if card.is_file() else None,
        "harness_args": harness_args_for(directory),
    }


def kb_card(kb_dir: str | Path) -> Path:
    """(Re)generate `KB_CARD.md` of an existing KB, keeping the user's text outside the generated markers."""
    from culturekb.kb.store import write_card

    return write_card(kb_dir)


def render_build_report(report: dict[str, Any]) -> str:
    """The Markdown page of a build report (what `culturekb build` prints)."""
    from culturekb.builders.report import render_report_markdown

    return render_report_markdown(report)


def export_review(kb_dir: str | Path, queue: str | Path, include_all_flagged: bool = False) -> int:
    """Write a KB's pending (or all flagged) tuples to a review queue file; returns how many were written."""
    from culturekb.builders.review import export_review_queue
    from culturekb.kb.store import KnowledgeBase

    return export_review_queue(KnowledgeBase.load(kb_dir), queue, include_all_flagged=include_all_flagged)


def apply_review(kb_dir: str | Path, decisions: str | Path, out: str | Path) -> dict[str, int]:
    """Apply a filled-in review queue to a KB and save the result to `out`; returns the decision counts."""
    from culturekb.builders.review import import_review_decisions
    from culturekb.kb.store import KnowledgeBase

    kb, summary = import_review_decisions(KnowledgeBase.load(kb_dir), decisions)
    kb.save(out)
    return dict(summary)


def demo_data_files() -> list[Path]:
    """The small real ArtEmis and ArtELingo samples shipped with the package (artworks; see DATA_NOTICE.md). The
    demo itself runs on the multilingual BRIGHTER sample (`culturekb.demo.demo_dataset`)."""
    root = Path(str(resources.files("culturekb.data").joinpath("demo")))
    files = sorted(p for p in root.iterdir() if p.suffix in (".csv", ".jsonl"))
    if not files:
        raise DataError(f"no demo data under {root}; the package install is incomplete")
    return files


# -- retrieval and inference jobs ------------------------------------------------------------------------------
def _settings(settings: Settings | None = None) -> Settings:
    from culturekb.config import load_settings

    return settings if settings is not None else load_settings()


def _response_cache(cache_dir: str | Path | None, settings: Settings | None = None) -> ResponseCache:
    from culturekb.models.cache import ResponseCache

    return ResponseCache(Path(cache_dir or _settings(settings).cache_dir) / "responses.sqlite")


def index_kb(
    kb_dir: str | Path, backend: str | None = None, embedder: str | None = None, *,
    settings: Settings | None = None, **store_kw: Any,
) -> IndexSummary:
    """Build (or rebuild) the vector index of a KB under `<kb>/index/<backend>`.

    `backend` and `embedder` default to the configured ones (`culturekb.config`); a rebuild of an existing
    index without a configured embedder keeps that index's embedder.
    """
    from culturekb.kb.store import KnowledgeBase
    from culturekb.models.factory import make_embedder
    from culturekb.retrieval.index import INDEX_META, build_index, index_dir, read_index_meta

    settings = _settings(settings)
    kb = KnowledgeBase.load(kb_dir)
    backend = backend or settings.backend
    previous = index_dir(kb, backend)
    spec = embedder or (settings.embedder if settings.is_set("embedder") else None)
    if spec is None and (previous / INDEX_META).is_file():
        spec = read_index_meta(previous).embedder_spec
    spec = spec or settings.embedder
    index = build_index(kb, make_embedder(spec), backend, embedder_spec=spec, **store_kw)
    meta = index.meta
    return {"kb_version": kb.version, "backend": backend, "embedder": meta.embedder, "embedder_spec": spec,
            "count": meta.count, "directory": str(index.directory or "")}


def open_augmenter(
    kb_dir: str | Path, backend: str | None = None, embedder: str | None = None, tau: float | None = None,
    build_index: bool = True, *, settings: Settings | None = None, status: str | None = None, **store_kw: Any,
) -> Augmenter:
    """An Augmenter over a saved KB, its index loaded read-only (built first when missing and `build_index`).

    Left out, the embedder is the one the index records, and backend, tau and the status filter (``all``,
    ``accepted``, ``pending``) come from the settings (see `culturekb.retrieval.open_retriever`).
    """
    from culturekb.inference.augmenter import Augmenter
    from culturekb.retrieval.filters import check_status
    from culturekb.retrieval.retriever import open_retriever

    settings = _settings(settings)
    chosen = check_status(status if status is not None else settings.status)
    retriever = open_retriever(kb_dir, embedder, backend, build=build_index, tau=tau, settings=settings,
                               status=chosen, **store_kw)
    return Augmenter(retriever)


def lookup_concepts(
    kb_dir: str | Path, concepts: Sequence[str], culture: str, *, tau: float | None = None, k: int = 1,
    backend: str | None = None, embedder: str | None = None, cross_culture: bool = False,
    settings: Settings | None = None, status: str | None = None,
) -> list[LookupRow]:
    """Exact-then-semantic lookup of concepts in one culture of a saved KB, as plain dicts: each match with its
    label distribution, counts, the 95% Wilson interval of its dominant share, a summary (``fear (7/10), awe
    (2/10)``) and its review status (`culturekb.inference.evidence`). `status`: the status filter (default: the
    ``status`` setting)."""
    from culturekb.inference.evidence import tuple_evidence

    retriever = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status).retriever
    served = retriever.tuple_filter.status
    rows: list[LookupRow] = []
    for query, m in zip(concepts, retriever.lookup(list(concepts), culture, tau=tau, k=k, cross_culture=cross_culture),
                        strict=True):
        if m is None:
            rows.append({"query": query, "match": None, "status_filter": served})
            continue
        t = m.tuple
        evidence = tuple_evidence(t, retriever.kb.scheme).to_dict()
        rows.append({"query": query, "status_filter": served,
                     "match": {"concept": t.concept, "culture": t.culture, "label": t.label, "kind": m.kind,
                               "score": round(float(m.score), 4), "support": t.support,
                               "rationales": t.rationales[:2], **evidence}})
    return rows


def kb_label_prior(kb_dir: str | Path, culture: str | None = None) -> dict[str, dict[str, float]]:
    """Each culture's label prior (its training label distribution, `KnowledgeBase.label_prior`), or only that of
    `culture` (an id or alias); an unknown culture raises ConfigError naming the KB's."""
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(kb_dir)
    priors = kb.label_prior()
    if culture is None:
        return priors
    found = culture if culture in priors else None
    if found is None:
        try:
            found = kb.culture(culture).id
        except ConfigError:
            found = None
    if found is None or found not in priors:
        raise ConfigError(f"culture {culture!r} is not in KB {kb_dir}; its cultures are: "
                          f"{', '.join(priors) or '(none)'}")
    return {found: priors[found]}


class ComparisonPage(TypedDict):
    """What `compare_kb` gives: the comparison as JSON-ready data and as Markdown."""

    json: dict[str, Any]
    markdown: str


def compare_kb(
    kb_dir: str | Path, cultures: Sequence[str] | None = None, *, min_support: int = 3, tau: float | None = None,
    min_margin: float | None = 0.25, top: int = 20, status: str | None = None, backend: str | None = None,
    settings: Settings | None = None,
) -> ComparisonPage:
    """Concepts on which a saved KB's cultures disagree (`culturekb.retrieval.compare`), aligned with the embedder
    its index records; `status` filters tuples by review status (default: the status setting)."""
    from culturekb.retrieval.compare import compare_cultures, render_comparison_markdown
    from culturekb.retrieval.filters import check_status
    from culturekb.retrieval.retriever import DEFAULT_TAU, open_retriever

    settings = _settings(settings)
    chosen = check_status(status if status is not None else settings.status)
    retriever = open_retriever(kb_dir, backend=backend, settings=settings, status=chosen)
    tau_ = tau if tau is not None else settings.tau if settings.tau is not None else DEFAULT_TAU
    found = compare_cultures(retriever, cultures, min_support=min_support, tau=tau_, min_margin=min_margin)
    data = found.to_dict()
    data["disagreements"] = data["disagreements"][:top]
    return {"json": data,
            "markdown": f"# Where cultures disagree: KB {retriever.kb.version}\n\n"
                        + render_comparison_markdown(found, top=top)}


def load_kb_samples(
    kb_dir: str | Path, paths: Sequence[str | Path], data_root: str | Path | None = None
) -> list[Sample]:
    """Samples of CSV/JSONL files read with the label scheme the KB's manifest embeds (no scheme file needed)."""
    from culturekb.kb.store import manifest_cultures, manifest_scheme, read_manifest

    manifest = read_manifest(kb_dir)
    _declare_kb_cultures(manifest_cultures(manifest))
    samples, _ = load_data(paths, data_root=data_root, scheme=manifest_scheme(manifest))
    return samples


def _declare_kb_cultures(cultures: Iterable[Culture]) -> None:
    """Make the cultures a KB describes known to this process before its data files are read, so that a culture
    the KB names (with its language and Western flag) is not registered again from the data as a bare code."""
    from culturekb.kb.cultures import declare_cultures, default_registry

    registry = default_registry()
    declare_cultures([c for c in cultures if registry.get(c.id) is None], registry)


def predict_job(
    kb_dir: str | Path, model: str, *, samples: Sequence[Sample], mode: str = "know",
    prompt_language: str | None = None, base_url: str | None = None, backend: str | None = None,
    embedder: str | None = None, cache_dir: str | Path | None = None, tau: float | None = None,
    settings: Settings | None = None, status: str | None = None,
) -> list[Prediction]:
    """Predictions for samples (an image + culture, or a file of samples) with any backend; what is left out
    (the status filter too) comes from the settings (`culturekb.config`) and the KB's index."""
    from culturekb.inference.predictors import make_predictor

    settings = _settings(settings)
    augmenter = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status)
    kw: dict[str, Any] = {}
    if model != "kb-prior":
        kw["cache"] = _response_cache(cache_dir, settings)
        kw["max_concurrency"] = settings.max_concurrency
        kw["parse_fallback"] = settings.parse_fallback
    predictor = make_predictor(model, augmenter, base_url=base_url or settings.base_url, **kw)
    return list(predictor.predict(samples, mode=mode, prompt_language=prompt_language))


def eval_artemculture(spec: ArtECultureSpec) -> RunResult:
    """The ArtECulture run: the held-out split of `spec.data`, predicted with the KB in `spec.kb_dir`."""
    from culturekb.evals.artemculture import ArtECultureRunner
    from culturekb.inference.predictors import make_predictor
    from culturekb.models.factory import make_client

    settings = _settings()
    base_url = spec.base_url or settings.base_url
    assert spec.kb_dir is not None  # ArtECultureSpec requires it
    check_run_out(spec.out)
    # the data first, read with the scheme the manifest embeds: bad data is refused before an index is built
    samples = load_kb_samples(spec.kb_dir, spec.data, data_root=spec.data_root)
    augmenter = open_augmenter(spec.kb_dir, spec.backend, spec.embedder, spec.tau, settings=settings,
                               status=spec.status)
    kb = augmenter.retriever.kb
    cache = _response_cache(spec.cache_dir, settings)
    kw: dict[str, Any] = {} if spec.model == "kb-prior" else {
        "cache": cache, "max_concurrency": settings.max_concurrency,
        "parse_fallback": _parse_fallback(spec, settings)}
    calibration: dict[str, Any] | None = None
    if spec.model == "kb-prior":
        kw, calibration = _kb_prior_calibration(augmenter, samples, spec.data)
    predictor = make_predictor(spec.model, augmenter, base_url=base_url, **kw)
    judge_clients = [make_client(j, base_url=base_url, cache=cache) for j in spec.judges]
    runner = ArtECultureRunner(samples, predictor, kb.scheme, split=spec.split, modes=spec.modes,
                               calibration=calibration,
                               prompt_languages=spec.prompt_languages, judges=judge_clients, kb_version=kb.version,
                               limit=spec.limit, progress=spec.progress)
    return runner.run(spec.out)


def eval_knowledge(spec: KnowledgeSpec) -> RunResult:
    """The knowledge report of the KB in `spec.kb_dir` on the labelled split of `spec.data`, with the kb-prior
    calibrated as `eval artemculture` calibrates it (the KB's calibration.json, else a fit on the data's valid split,
    else the uncalibrated weights), the calibration recorded in the report."""
    from culturekb.evals.knowledge import KnowledgeRunner
    from culturekb.inference.predictors import make_predictor

    assert spec.kb_dir is not None  # KnowledgeSpec requires it
    check_run_out(spec.out)
    samples = load_kb_samples(spec.kb_dir, spec.data, data_root=spec.data_root)  # before the index and model
    augmenter = open_augmenter(spec.kb_dir, spec.backend, spec.embedder, spec.tau, status=spec.status)
    kw, calibration = _kb_prior_calibration(augmenter, samples, spec.data)
    runner = KnowledgeRunner(samples, make_predictor("kb-prior", augmenter, **kw), augmenter, split=spec.split,
                             n_resamples=spec.n_resamples, confidence=spec.confidence, seed=spec.seed,
                             n_bins=spec.n_bins, top_concepts=spec.top_concepts, kb_prior_calibration=calibration,
                             limit=spec.limit, progress=spec.progress)
    return runner.run(spec.out)


def calibrate_kb(
    kb_dir: str | Path, data: Sequence[str | Path], *, split: str = "valid", data_root: str | Path | None = None,
    backend: str | None = None, embedder: str | None = None, tau: float | None = None, status: str | None = None,
    write: bool = True, settings: Settings | None = None,
) -> Calibration:
    """Fit the KB prior's weights and concept filter on the `split` samples of `data` and (with `write`) save them
    as the KB's `calibration.json` (`culturekb.inference.calibration`). The fit sees every tuple the status filter
    serves, whatever an earlier calibration hid."""
    samples = load_kb_samples(kb_dir, data, data_root=data_root)  # before the index and model
    augmenter = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status, calibrated=False)
    return calibrate_augmenter(augmenter, samples, split, data, kb_dir if write else None)


def calibrate_augmenter(augmenter: Augmenter, samples: Sequence[Sample], split: str = "valid",
                        data: Sequence[str | Path] = (), write_to: str | Path | None = None,
                        left_out: bool = True) -> Calibration:
    """`culturekb calibrate` on an open augmenter (its KB, embedder and status filter): fit on the labelled `split`
    samples and, with `left_out`, the KB's training samples each left out of the tuples it supports (when the KB
    was built with an offline concept extractor, so the concepts the build counted can be recomputed); save into
    `write_to` when given."""
    from culturekb.builders.pipeline import training_concepts
    from culturekb.inference.calibration import fit_calibration
    from culturekb.kb.calibration import write_calibration

    valid = [s for s in samples if s.split == split and s.label is not None]
    if not valid:
        splits = sorted({str(s.split) for s in samples})
        raise DataError(f"no labelled samples in split {split!r} to calibrate on (the data has splits {splits}); "
                        "give data with a valid split, or choose another with --split")
    kb = augmenter.retriever.kb
    extra: list[tuple[Sample, Sequence[str], Sequence[str]]] = []
    if left_out:
        build_split = kb.build_config.get("split", "train")
        cultures = set(augmenter.retriever.cultures)
        train = [s for s in samples if s.label is not None and s.culture in cultures
                 and (build_split is None or s.split == build_split) and s.split != split]
        counted = training_concepts(train, kb.build_config) if train else None
        if counted is not None:
            extra = list(zip(train, augmenter.concepts_for(train), counted, strict=True))
        elif train:
            log.info("calibrate: the KB's concept extractor needs a model; fitting on the %s split only", split)
    cal = fit_calibration(augmenter.retriever, valid, augmenter.concepts_for(valid), left_out=extra,
                          fitted_on={"split": split, "data": [Path(d).name for d in data]})
    if write_to is not None:
        write_calibration(write_to, cal)
    return cal


def _kb_prior_calibration(augmenter: Augmenter, samples: Sequence[Sample], data: Sequence[str | Path]
                          ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The kb-prior's calibration for an eval: the KB's own `calibration.json`, else one fitted here on the data's
    valid split (kept in the run's report, not written into the KB), else none (uncalibrated weights)."""
    from culturekb.kb.calibration import read_calibration

    kb = augmenter.retriever.kb
    found = read_calibration(kb.path, kb.version) if kb.path is not None else None
    source = "kb"
    if found is None:
        if not any(s.split == "valid" and s.label is not None for s in samples):
            log.warning("kb-prior: the KB has no calibration.json and the data no valid split; using the "
                        "uncalibrated weights (run `culturekb calibrate` on data with a valid split)")
            return {}, None
        found, source = calibrate_augmenter(augmenter, samples, "valid", data), "fitted on this data's valid split"
    # the predictor is handed the calibration read or fitted here, so it does not read calibration.json again
    return {"calibration": found}, {"source": source, **found.model_dump(mode="json", exclude={"grid"})}


def _parse_fallback(spec: ParseSpec, settings: Settings | None = None) -> bool:
    """Whether a run's model answers go through the parser's embedding fallback: the spec's choice (a flag), else
    the ``parse_fallback`` setting."""
    return _settings(settings).parse_fallback if spec.parse_fallback is None else spec.parse_fallback


# -- Cedar and RICE-VL runs ----------------------------------------------------------------------------------------
def _eval_cache(model: str, cache_dir: str | Path | None) -> ResponseCache | None:
    return None if model == "kb-prior" else _response_cache(cache_dir)


def _eval_client(
    spec: str | None, base_url: str | None, cache: ResponseCache | None, scope: str = ""
) -> ModelClient | None:
    """The model client of a run: None for the offline baselines, else any registered client (an unknown spec
    raises with every valid form). Server-only options are dropped by local clients (hf)."""
    if spec is None or spec in ("kb-prior", "reference", "full-image"):
        return None
    from culturekb.models.factory import make_client

    settings = _settings()
    return make_client(spec, base_url=base_url or settings.base_url, cache=cache, cache_scope=scope,
                       max_concurrency=settings.max_concurrency)


def eval_cedar(spec: CedarSpec) -> RunResult:
    """The Cedar run on a Cedar JSONL file: orig and know (cues from the KB in `spec.kb_dir`), per language and
    modality."""
    from culturekb.evals.cedar import CedarPredictor, CedarRunner
    from culturekb.evals.loaders import load_cedar

    check_run_out(spec.out)
    samples = load_cedar(spec.data, scheme=spec.scheme, languages=spec.languages, modalities=spec.modalities,
                         data_root=spec.data_root, check_images=spec.model != "kb-prior")
    retriever = _eval_retriever(spec.kb_dir, spec)
    kb_version = retriever.kb.version if retriever is not None else ""
    chosen = list(spec.modes or ["orig", "know"])
    if retriever is None and ("know" in chosen or spec.prompt_languages):
        raise ConfigError("Cedar mode 'know' and the prompt-language grid need a KB for the cues; pass --kb DIR "
                          "or run --modes orig")
    client = _eval_client(spec.model, spec.base_url, _eval_cache(spec.model, spec.cache_dir), kb_version)
    predictor = CedarPredictor(spec.scheme, retriever, client, image_concepts=_image_concepts(spec, client),
                               max_cues=spec.max_cues, tau=spec.tau, template_dir=spec.template_dir,
                               max_tokens=spec.max_tokens,
                               parse_fallback=_parse_fallback(spec))
    runner = CedarRunner(samples, predictor, spec.scheme, modes=chosen, prompt_languages=spec.prompt_languages,
                         kb_version=kb_version, limit=spec.limit, progress=spec.progress)
    return runner.run(spec.out)


def _eval_retriever(kb_dir: Path | None, spec: RetrievalSpec) -> Retriever | None:
    """The retriever of a run's KB (None without one), its embedder and backend the index's own by default."""
    if kb_dir is None:
        return None
    return open_augmenter(kb_dir, spec.backend, spec.embedder, spec.tau, status=spec.status).retriever


def _image_concepts(spec: CedarSpec | RiceVLVQASpec | CulturalToMSpec, client: ModelClient | None
                    ) -> ConceptExtractor | None:
    """The VLM concept extractor for the items' images when the spec asks for it and a model answers."""
    if not spec.image_concepts or client is None:
        return None
    from culturekb.builders.concepts import VLMConceptExtractor

    return VLMConceptExtractor(client)


def build_ricevl_cue_kb(
    metadata: str | Path, out: str | Path, *, scheme: str = "ricevl14", embedder: str | None = None,
    policy: str = "keep", allow_unknown_countries: bool = False, cache_dir: str | Path | None = None,
    progress: bool = True,
) -> BuildResult:
    """Build the regional cue KB from RICE-VL-style training metadata (JSONL) into `out`; returns the BuildResult."""
    from culturekb.builders.cue_kb import build_cue_kb
    from culturekb.evals.loaders import load_cue_metadata

    samples = load_cue_metadata(metadata, scheme=scheme, allow_unknown_countries=allow_unknown_countries)
    return build_cue_kb(samples, out, scheme=scheme, embedder=embedder or _settings().embedder, policy=policy,
                        cache_dir=cache_dir, progress=progress)


def eval_ricevl_vqa(spec: RiceVLVQASpec) -> RunResult:
    """RICE-VL VQA under global / sea / kb-cues, scored with SEA-LAVE by `spec.judge` ('reference' offline, or a
    judge model). The cue KB is `spec.kb_dir`, or is built from `spec.cue_metadata` into `<out>/cue_kb`."""
    from culturekb.evals.loaders import load_ricevl_vqa
    from culturekb.evals.ricevl import Region, RiceVLVQARunner, SeaLaveJudge, region_from_samples

    check_run_out(spec.out)
    samples = load_ricevl_vqa(spec.data, scheme=spec.scheme, data_root=spec.data_root,
                              check_images=spec.model != "kb-prior",
                              allow_unknown_countries=spec.allow_unknown_countries)
    kb_dir = spec.kb_dir
    if kb_dir is None and spec.cue_metadata is not None:
        kb_dir = spec.out / "cue_kb"
        build_ricevl_cue_kb(spec.cue_metadata, kb_dir, scheme=spec.scheme, embedder=spec.embedder,
                            allow_unknown_countries=spec.allow_unknown_countries,
                            cache_dir=spec.cache_dir or spec.out / "cache", progress=spec.progress)
    retriever = _eval_retriever(kb_dir, spec)
    offline = spec.model == "kb-prior" and spec.judge == "reference"
    cache = _eval_cache("kb-prior" if offline else "model", spec.cache_dir)
    client = _eval_client(spec.model, spec.base_url, cache, retriever.kb.version if retriever is not None else "")
    judge = None
    if spec.judge != "reference":
        judge_client = _eval_client(spec.judge, spec.judge_base_url or spec.base_url, cache)
        if judge_client is None:
            raise ConfigError(f"unknown judge {spec.judge!r}; use 'reference' (offline) or 'openai:MODEL'")
        judge = SeaLaveJudge(judge_client, retries=spec.judge_retries, template_dir=spec.template_dir)
    region = (Region(spec.region or "the region", spec.region_countries) if spec.region_countries
              else region_from_samples(samples, spec.region))
    runner = RiceVLVQARunner(samples, client=client, retriever=retriever, judge=judge, region=region,
                             setting_names=spec.setting_names, image_concepts=_image_concepts(spec, client),
                             cue_scope=spec.cue_scope, max_cues=spec.max_cues, fallback_cues=spec.fallback_cues,
                             tau=spec.tau, template_dir=spec.template_dir, max_tokens=spec.max_tokens,
                             limit=spec.limit, progress=spec.progress)
    return runner.run(spec.out)


def eval_ricevl_grounding(spec: RiceVLGroundingSpec) -> RunResult:
    """RICE-VL visual grounding: IoU per country and category (model 'full-image'/'kb-prior': whole-image box)."""
    from culturekb.evals.loaders import load_ricevl_grounding
    from culturekb.evals.ricevl import RiceVLGroundingRunner

    check_run_out(spec.out)
    samples = load_ricevl_grounding(spec.data, bbox_format=spec.bbox_format, data_root=spec.data_root,
                                    scheme=spec.scheme, allow_unknown_countries=spec.allow_unknown_countries)
    offline = spec.model in ("kb-prior", "full-image")
    client = None if offline else _eval_client(spec.model, spec.base_url, _eval_cache(spec.model, spec.cache_dir))
    runner = RiceVLGroundingRunner(samples, client=client, scale=spec.scale, layout=spec.layout,
                                   template_dir=spec.template_dir, max_tokens=spec.max_tokens, limit=spec.limit,
                                   progress=spec.progress)
    return runner.run(spec.out)


def eval_culturaltom(spec: CulturalToMSpec) -> RunResult:
    """CulturalToM-VQA: the strategies (and their +kb-cues variants with `spec.kb_dir`), the blind run and the
    positivity baseline; with ``model="positivity"`` only the offline baseline runs."""
    from culturekb.evals.culturaltom import CulturalToMRunner, load_culturaltom, load_matrix

    check_run_out(spec.out)
    matrix = load_matrix(spec.matrix)
    with_model = spec.model != "positivity"
    image_free = spec.setting_names is not None and set(spec.setting_names) <= {"blind", "positivity"}
    samples = load_culturaltom(spec.data, data_root=spec.data_root, matrix=matrix,
                               check_images=with_model and not image_free)
    retriever = _eval_retriever(spec.kb_dir, spec)
    client = None
    if with_model:
        client = _eval_client(spec.model, spec.base_url, _eval_cache(spec.model, spec.cache_dir),
                              retriever.kb.version if retriever is not None else "")
    runner = CulturalToMRunner(
        samples, client=client, retriever=retriever, setting_names=spec.setting_names, matrix=matrix,
        image_concepts=_image_concepts(spec, client), max_cues=spec.max_cues, tau=spec.tau,
        template_dir=spec.template_dir, max_tokens=spec.max_tokens, reasoning_max_tokens=spec.reasoning_max_tokens,
        graph_retries=spec.graph_retries, positivity_seed=spec.positivity_seed, limit=spec.limit,
        progress=spec.progress)
    return runner.run(spec.out)


def eval_commet(spec: CommetSpec) -> RunResult:
    """CoMMET on a StoryTurns file: each story played as a multi-turn chat with `spec.model`, each answer judged by
    `spec.judge` ('offline': string match, then embedding similarity; or a judge model) before the next turn's
    feedback is chosen; settings orig, blind and, with `spec.kb_dir`, kb-cues."""
    from culturekb.evals.commet import CommetRunner, ModelAnswerJudge, OfflineAnswerJudge, load_story_turns

    check_run_out(spec.out)
    stories = load_story_turns(spec.data, data_root=spec.data_root)
    retriever = _eval_retriever(spec.kb_dir, spec)
    cache = _response_cache(spec.cache_dir)
    client = _eval_client(spec.model, spec.base_url, cache, retriever.kb.version if retriever is not None else "")
    if client is None:
        raise ConfigError(f"CoMMET needs a chat model, not {spec.model!r}; give --model openai:NAME --base-url URL")
    judge: OfflineAnswerJudge | ModelAnswerJudge
    if spec.judge == "offline":
        judge = OfflineAnswerJudge(embedder_spec=spec.judge_embedder, threshold=spec.judge_threshold)
    else:
        judge_client = _eval_client(spec.judge, spec.judge_base_url or spec.base_url, cache)
        if judge_client is None:
            raise ConfigError(f"unknown CoMMET judge {spec.judge!r}; use 'offline' or a model such as 'openai:MODEL'")
        judge = ModelAnswerJudge(judge_client, retries=spec.judge_retries, template_dir=spec.template_dir)
    runner = CommetRunner(stories, client=client, judge=judge, retriever=retriever, setting_names=spec.setting_names,
                          concurrency=spec.concurrency or _settings().max_concurrency, max_cues=spec.max_cues,
                          tau=spec.tau, template_dir=spec.template_dir, max_tokens=spec.max_tokens, limit=spec.limit,
                          progress=spec.progress)
    return runner.run(spec.out)


# -- `culturekb eval NAME`: one command per registered benchmark runner ----------------------------------------
def eval_names() -> list[str]:
    """The benchmarks `culturekb eval` offers: every registered runner, built-in and plug-in (imports none)."""
    from culturekb import registry

    return registry.RUNNERS.names()


def eval_command(name: str) -> Callable[..., RunResult]:
    """The function behind ``culturekb eval NAME``: its parameters are the options the runner declares (typer
    reads them, with their help); called, it runs the benchmark's job and returns the `RunResult`."""
    import functools

    from culturekb.evals.runner import get_runner
    from culturekb.registry import load_target

    runner = get_runner(name)
    declared = runner.command
    if declared is None:
        raise ConfigError(
            f"benchmark runner {name!r} ({runner.__module__}.{runner.__qualname__}) declares no command line; give "
            "the class `command = RunnerCommand(options=..., job=...)` (see culturekb.evals.runner)"
        )
    options = load_target(declared.options, f"the options of runner {name!r}") if isinstance(
        declared.options, str) else declared.options
    job = load_target(declared.job, f"the job of runner {name!r}") if isinstance(declared.job, str) else declared.job

    @functools.wraps(options)
    def command(**values: Any) -> RunResult:
        given = options(**values)
        if job is not None:  # keyword arguments, or one value (a run spec) the job takes whole
            result: RunResult = job(**given) if isinstance(given, Mapping) else job(given)
            return result
        kwargs = dict(given) if isinstance(given, Mapping) else {}
        if "out" not in kwargs:
            raise ConfigError(f"runner {name!r}: its options return no 'out' (the run folder) and it declares no "
                              "job; return the runner's keyword arguments with 'out', or give RunnerCommand a job")
        out = kwargs.pop("out")
        return runner(**kwargs).run(out)

    return command


def runner_tables(result: RunResult) -> list[str]:
    """The Markdown of each table of a run, title first: what `culturekb eval` prints after a run."""
    from culturekb.evals.reports import render_markdown_table

    return [f"## {table.title}\n\n{render_markdown_table(table)}" for table in result.tables.values()]
