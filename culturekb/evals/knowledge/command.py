"""The options of ``culturekb eval knowledge``, returning the run spec (see `culturekb.evals.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.evals.commands import (
    OUT_HELP,
    STATUS_HELP,
    MapOption,
    OnBadRowOption,
    SchemeOption,
    field_map_option,
    status_option,
)
from culturekb.evals.knowledge.spec import KnowledgeSpec

__all__ = ["knowledge_options"]


def knowledge_options(
    data: Annotated[list[Path], typer.Argument(help="labelled data files with a split column (CSV or JSONL)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    split: Annotated[str, typer.Option(help="split to report on")] = "test",
    resamples: Annotated[int, typer.Option(help="bootstrap resamples per interval")] = 2000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap resamples")] = 0,
    bins: Annotated[int, typer.Option(help="confidence bins of the reliability diagram")] = 10,
    top: Annotated[int, typer.Option(help="concepts listed as helping and as hurting")] = 10,
    limit: Annotated[int | None, typer.Option(help="report on the first N samples only")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    scheme: SchemeOption = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> KnowledgeSpec:
    """Knowledge report: coverage, hit precision, calibration, kb-prior accuracy with intervals and paired tests."""
    return KnowledgeSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=tuple(data), kb_dir=kb, out=out_dir, split=split, n_resamples=resamples, seed=seed, n_bins=bins,
        top_concepts=top, limit=limit, data_root=data_root, status=status_option(status), scheme=scheme)
