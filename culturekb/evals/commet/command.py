"""The options of ``culturekb eval commet``, returning the run spec (see `culturekb.evals.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.evals.commands import (
    OUT_HELP,
    STATUS_HELP,
    MapOption,
    OnBadRowOption,
    csv_tuple,
    field_map_option,
    status_option,
)
from culturekb.evals.commet.spec import CommetSpec

__all__ = ["commet_options"]


def commet_options(
    data: Annotated[Path, typer.Argument(help="StoryTurns JSONL: one story per line (id, culture, modality, "
                                              "category, turns: text, question, image, answer, feedback ...)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    model: Annotated[str, typer.Option(help="the chat model: openai:MODEL | hf:PATH | any registered client")],
    kb: Annotated[Path | None, typer.Option("--kb", help="KB directory the kb-cues come from")] = None,
    judge: Annotated[str, typer.Option(help="offline (string, then embedding match; weaker) | openai:MODEL")
                     ] = "offline",
    settings: Annotated[str | None, typer.Option(help="comma list of orig, kb-cues, blind (default: orig, blind "
                                                      "for image-dependent stories, kb-cues with --kb)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="endpoint of the judge (default: --base-url)")] = None,
    judge_threshold: Annotated[float, typer.Option(help="offline judge: least cosine similarity")] = 0.6,
    concurrency: Annotated[int | None, typer.Option(min=1, help="stories played at once (default: max_concurrency)")
                           ] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 256,
    limit: Annotated[int | None, typer.Option(help="play only the first N stories")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> CommetSpec:
    """CoMMET: multi-turn ToM stories, feedback from the judged previous answer; story and question accuracy."""
    return CommetSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=data, out=out_dir, model=model, kb_dir=kb, judge=judge, setting_names=csv_tuple(settings, "--settings"),
        base_url=base_url, judge_base_url=judge_base_url, judge_threshold=judge_threshold, concurrency=concurrency,
        max_tokens=max_tokens, limit=limit, data_root=data_root, status=status_option(status))
