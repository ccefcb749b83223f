"""The options of ``culturekb eval culturaltom``, returning the run spec (see `culturekb.evals.commands`)."""

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
from culturekb.evals.culturaltom.spec import CulturalToMSpec

__all__ = ["culturaltom_options"]

def culturaltom_options(
    data: Annotated[Path, typer.Argument(help="CulturalToM-VQA JSONL or TSV (id, image, question, options, answer, "
                                              "task, level, image_source, region[, culture, context])")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    model: Annotated[str, typer.Option(help="positivity (the offline baseline only) | openai:MODEL | hf:PATH")
                     ] = "positivity",
    kb: Annotated[Path | None, typer.Option("--kb", help="KB directory of the +kb-cues settings")] = None,
    settings: Annotated[str | None, typer.Option(
        help="comma list of zero-shot, cot, compositional (each also +kb-cues), blind, positivity "
             "(default: every one the model and KB allow)")] = None,
    matrix: Annotated[Path | None, typer.Option(help="task x complexity matrix JSON (default: the packaged one)")
                      ] = None,
    image_concepts: Annotated[bool, typer.Option(help="also ask the model for image concepts (cue queries)")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens of a letter-only answer")] = 32,
    reasoning_max_tokens: Annotated[int, typer.Option(help="new tokens of reasoning answers (>= 512)")] = 1024,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N questions")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    thinking: Annotated[bool, typer.Option(
        help="the model is a reasoning model whose answers start inside its thinking (its chat template opens "
             "<think>): an answer cut off before </think> counts only an explicit answer, never a passing guess")
                        ] = False,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> CulturalToMSpec:
    """CulturalToM-VQA: accuracy and macro-F1 per setting, task, level, image source and region; blind and
    positivity diagnostics; resumable."""
    return CulturalToMSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=data, out=out_dir, model=model, kb_dir=kb, setting_names=csv_tuple(settings, "--settings"), matrix=matrix,
        image_concepts=image_concepts, base_url=base_url, max_tokens=max_tokens,
        reasoning_max_tokens=reasoning_max_tokens, limit=limit, data_root=data_root, status=status_option(status),
        thinking=thinking)
