"""The options of ``culturekb eval ricevl-vqa`` and ``ricevl-grounding``, returning their run specs (see
`culturekb.evals.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.evals.commands import (
    MODEL_HELP,
    OUT_HELP,
    STATUS_HELP,
    MapOption,
    OnBadRowOption,
    csv_tuple,
    field_map_option,
    status_option,
)
from culturekb.evals.ricevl.spec import RiceVLGroundingSpec, RiceVLVQASpec

__all__ = ["ricevl_vqa_options", "ricevl_grounding_options"]


def ricevl_vqa_options(
    data: Annotated[Path, typer.Argument(help="RICE-VL VQA JSONL (id, country, category, sub_culture, image, "
                                              "question, format, answer)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    kb: Annotated[Path | None, typer.Option("--kb", help="cue KB directory")] = None,
    cue_metadata: Annotated[Path | None, typer.Option(help="RICE-VL-style metadata JSONL for the cue KB")] = None,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "kb-prior",
    judge: Annotated[str, typer.Option(help="SEA-LAVE judge: reference (offline) | openai:MODEL")] = "reference",
    settings: Annotated[str, typer.Option(help="comma list of global, sea, kb-cues")] = "global,sea,kb-cues",
    region: Annotated[str | None, typer.Option(help="region named by the sea framing (default Southeast Asia)")] = None,
    region_countries: Annotated[str | None, typer.Option(help="comma list of the region's countries")] = None,
    cue_scope: Annotated[str, typer.Option(help="kb-cues from any region country, or the item's (oracle)")] = "region",
    any_country: Annotated[bool, typer.Option(help="accept countries outside the culture registry")] = False,
    scheme: Annotated[str, typer.Option(help="category scheme: ricevl14, a scheme file, or a comma list")
                      ] = "ricevl14",
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="endpoint of the judge (default: --base-url)")] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 128,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> RiceVLVQASpec:
    """RICE-VL VQA: SEA-LAVE per setting, country, category and question format; resumable."""
    return RiceVLVQASpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=data, out=out_dir, kb_dir=kb, cue_metadata=cue_metadata, model=model, judge=judge, base_url=base_url,
        judge_base_url=judge_base_url, setting_names=csv_tuple(settings, "--settings"), region=region,
        region_countries=csv_tuple(region_countries, "--region-countries"), cue_scope=cue_scope,
        allow_unknown_countries=any_country, scheme=scheme,
        max_tokens=max_tokens, limit=limit, data_root=data_root, status=status_option(status))


def ricevl_grounding_options(
    data: Annotated[Path, typer.Argument(help="RICE-VL grounding JSONL (id, country, category, image, phrase, bbox)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    model: Annotated[str, typer.Option(help="full-image (offline baseline) | openai:MODEL | hf:PATH")] = "full-image",
    bbox_format: Annotated[str, typer.Option(help="gold boxes: xyxy|xywh|xyxy_norm|xywh_norm|xyxy_1000")] = "xyxy",
    scale: Annotated[str, typer.Option(help="model boxes: auto | pixels | unit | thousandths")] = "auto",
    layout: Annotated[str, typer.Option(help="model boxes: auto | xyxy | xywh")] = "auto",
    any_country: Annotated[bool, typer.Option(help="accept countries outside the culture registry")] = False,
    scheme: Annotated[str, typer.Option(help="category scheme: ricevl14, a scheme file, or a comma list")
                      ] = "ricevl14",
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> RiceVLGroundingSpec:
    """RICE-VL grounding: mean IoU per country and category, accuracy at IoU >= 0.5; failures counted."""
    return RiceVLGroundingSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=data, out=out_dir, model=model, base_url=base_url, bbox_format=bbox_format, scale=scale, layout=layout,
        allow_unknown_countries=any_country, scheme=scheme, limit=limit, data_root=data_root)
