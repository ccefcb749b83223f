"""The build job: load the data files, build a KB, index and calibrate it (`culturekb build`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from culturekb._io import exclusive_lock
from culturekb.config import Settings
from culturekb.errors import ConfigError
from culturekb.kb.schema import Sample
from culturekb.workflows._common import check_base_url
from culturekb.workflows.data import check_data_file, load_data

if TYPE_CHECKING:
    from culturekb.builders.pipeline import BuildConfig, BuildResult
    from culturekb.models.base import Embedder

log = logging.getLogger(__name__)

__all__ = ["build_from_files"]


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
    model of the `embedder` option, already loaded (the build then loads no copy of its own). Label words
    (`culturekb.kb.label_words`): option `label_words_file` (a label words file) and the words the data's paired
    label columns teach (``label_<lang>``, ``label_native``, or option `label_column_words`, ``["COLUMN=LANG"]``)
    go into the KB's scheme; the build report's ``label_words`` section lists them.

    Option `calibrate` (default True): once the KB is written, index it with the build's embedder and fit the
    kb-prior's weights and concept filter (`culturekb.workflows.calibrate.calibrate_built_kb`: the valid split and
    the training samples each left out, or the training samples alone when the data has no valid split), written as
    the KB's `calibration.json`; the build report's ``calibration`` section says on what and how many samples.

    The KB is written, indexed and calibrated in a temporary folder beside `out` that replaces `out` only once all
    three succeeded (`culturekb.kb.store.kb_writer`): a build that fails at any step (a full disk while indexing)
    leaves `out` as it was, the previous KB or nothing."""
    from culturekb._runlog import run_log
    from culturekb.builders.pipeline import BuildConfig, build_kb, make_components
    from culturekb.config import load_settings
    from culturekb.kb.card import describe_sources
    from culturekb.kb.cultures import declare_cultures, load_cultures_file
    from culturekb.kb.store import check_kb_target, kb_writer

    aggregate = options.pop("aggregate", None) or "majority"
    field_map = options.pop("field_map", None)
    on_bad_row = options.pop("on_bad_row", None) or "fail"
    label_words_file = options.pop("label_words_file", None)
    column_words = options.pop("label_column_words", None)
    calibrate = options.pop("calibrate", True)
    calibrate = True if calibrate is None else bool(calibrate)
    check_base_url(options.get("base_url"))
    settings = load_settings(settings_file, cache_dir=cache_dir, base_url=options.get("base_url"))
    # None means "not given" for every option but split, where it means every sample (`--split all`)
    opts = {k: v for k, v in options.items() if v is not None or k == "split"}
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
    samples, load_report = load_data(paths, data_root=data_root, scheme=config.scheme, cultures=config.cultures,
                                     aggregate=aggregate, field_map=field_map, on_bad_row=on_bad_row)
    config, words_report = _label_words(paths, config, label_words_file, column_words, field_map)
    # inputs are valid; one build per --out at a time: a second one is refused (exit 2) before any model loads,
    # not left to race the first one's save
    with exclusive_lock(out, "build", "wait for that build to finish, or give this one another --out"), \
            run_log(out, "build", atomic=True), \
            kb_writer(out) as staging:  # the KB, its index and calibration replace --out together, or nothing does
        # made here (not inside build_kb) so that the calibration's index reuses the embedder the build loaded
        components = make_components(config, loaded_embedder, cache_dir=settings.cache_dir)
        result = build_kb(samples, config, out=out, cache_dir=settings.cache_dir, progress=progress,
                          components=components, into=staging,
                          extra_report={"dropped_no_majority": load_report["dropped_no_majority"],
                                        "sources": describe_sources(paths, load_report["sources"]),  # KB card
                                        **words_report})
        if calibrate:
            result = _calibrated(result, staging, samples, paths, components, config, settings)
    result.kb.path = Path(out)  # the run log (moved in when the block ended) and the KB are now at --out
    return result


def _calibrated(result: BuildResult, out: str | Path, samples: Sequence[Sample], paths: Sequence[str | Path],
                components: Any, config: BuildConfig, settings: Settings) -> BuildResult:
    """The build indexed and calibrated (`calibrate_built_kb`), its report's ``calibration`` section written into
    the KB's build_report.json and .md (sidecars: the KB version does not change)."""
    import dataclasses

    from culturekb._io import atomic_write_json, atomic_write_text
    from culturekb.builders.report import render_report_markdown
    from culturekb.workflows.calibrate import calibrate_built_kb

    embedder = _build_embedder(components)
    section = calibrate_built_kb(out, samples, paths, embedder=embedder, embedder_spec=config.embedder,
                                 settings=settings)
    report = {**result.report, "calibration": section}
    atomic_write_json(Path(out) / "build_report.json", report)
    atomic_write_text(Path(out) / "build_report.md", render_report_markdown(report))
    return dataclasses.replace(result, report=report)


def _build_embedder(components: Any) -> Embedder | None:
    """The embedder the build loaded (its prototype judge's or generator's), so indexing loads no second copy."""
    if components is None:
        return None
    for part in (*getattr(components, "judges", ()), getattr(components, "generator", None)):
        emb = getattr(part, "embedder", None)
        if emb is not None and hasattr(emb, "encode"):
            return emb  # type: ignore[no-any-return]
    return None


def _label_words(paths: Sequence[str | Path], config: BuildConfig, words_file: str | Path | None,
                 column_words: Sequence[str] | None, field_map: Any = None) -> tuple[BuildConfig, dict[str, Any]]:
    """The build config with the label words of `words_file` (``--label-words``) and those the data's paired label
    columns teach (`culturekb.kb.label_words.learn_label_words`; ``--label-column-words COLUMN=LANG``), the given
    words winning; and the build report's ``label_words`` section (none when there is nothing to say)."""
    from culturekb.kb.label_words import learn_label_words, load_label_words, merge_label_words, parse_column_words
    from culturekb.kb.schemes import get_scheme

    given = load_label_words(words_file) if words_file is not None else {}
    scheme = get_scheme(config.scheme).with_words(given, source=str(words_file))
    if isinstance(field_map, str):
        from culturekb._records import parse_field_map

        field_map = parse_field_map(field_map)
    learned = learn_label_words(paths, scheme, columns=parse_column_words(column_words), field_map=field_map)
    words = merge_label_words(merge_label_words(config.label_words, learned.words), given)
    report: dict[str, Any] = dict(learned.report)
    if given:
        report["given"] = {"file": str(words_file), "words": sum(len(ws) for t in given.values() for ws in t.values())}
    if not words:
        return config, {"label_words": report} if report else {}
    as_lists = {lang: {lab: list(ws) for lab, ws in t.items()} for lang, t in words.items()}
    return config.model_copy(update={"label_words": as_lists}), {"label_words": report}
