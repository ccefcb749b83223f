"""High-level jobs that the CLI, the notebook and scripts call: load data, build, inspect, review, demo."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import Sample

__all__ = ["load_data", "build_from_files", "inspect_kb", "apply_review", "run_demo", "demo_data_files"]


def load_data(
    paths: Sequence[str | Path],
    data_root: str | Path | None = None,
    scheme: str = "artemis9",
    cultures: Sequence[str] | None = None,
    seed: int = 0,
) -> tuple[list[Sample], dict[str, Any]]:
    """Read CSV/JSONL files into samples; images without a split get the deterministic 8:1:1 split by image."""
    from culturekb.kb.loaders import load_artemis_csv, load_samples_jsonl, split_by_image

    if not paths:
        raise DataError("no data files given; pass at least one CSV or JSONL file")
    samples: list[Sample] = []
    dropped: dict[str, int] = {}
    sources = []
    for p in map(Path, paths):
        if not p.is_file():
            raise DataError(f"data file {p} does not exist")
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


def build_from_files(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    data_root: str | Path | None = None,
    cache_dir: str | Path | None = None,
    settings_file: str | Path | None = None,
    progress: bool = True,
    **options: Any,
) -> Any:
    """Load the data files and build a KB into `out` (see `BuildConfig` for the options)."""
    from culturekb.builders.pipeline import BuildConfig, build_kb
    from culturekb.config import load_settings

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
    samples, load_report = load_data(paths, data_root=data_root, scheme=config.scheme, cultures=config.cultures)
    return build_kb(samples, config, out=out, cache_dir=settings.cache_dir, progress=progress,
                    extra_report={"dropped_no_majority": load_report["dropped_no_majority"]})


def inspect_kb(path: str | Path, top: int = 10) -> dict[str, Any]:
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


def apply_review(kb_dir: str | Path, decisions: str | Path, out: str | Path) -> dict[str, int]:
    from culturekb.builders.review import import_review_decisions
    from culturekb.kb.store import KnowledgeBase

    kb, summary = import_review_decisions(KnowledgeBase.load(kb_dir), decisions)
    kb.save(out)
    return dict(summary)


def demo_data_files() -> list[Path]:
    """The small real sample shipped with the package (see DATA_NOTICE.md)."""
    root = Path(str(resources.files("culturekb.data").joinpath("demo")))
    files = sorted(p for p in root.iterdir() if p.suffix in (".csv", ".jsonl"))
    if not files:
        raise DataError(f"no demo data under {root}; the package install is incomplete")
    return files


def run_demo(out: str | Path, console: Any = None, progress: bool = True) -> dict[str, Any]:
    """The main job on the embedded defaults: build a KB from the shipped sample and show what it holds."""
    out = Path(out)
    kb_dir = out / "kb"
    result = build_from_files(demo_data_files(), kb_dir, cache_dir=out / "cache", progress=progress)
    from culturekb.builders.report import render_report_markdown

    inspected = inspect_kb(kb_dir, top=8)
    md = render_report_markdown(result.report) + "\n" + inspected["markdown"]
    return {"kb_dir": kb_dir, "report": result.report, "markdown": md}
