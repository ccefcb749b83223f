"""The options of ``culturekb eval artemculture``, returning the run spec (see `culturekb.evals.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.evals.artemculture.spec import ArtECultureSpec
from culturekb.evals.commands import (
    LABEL_WORDS_HELP,
    LANG_HELP,
    MODEL_HELP,
    OUT_HELP,
    PARSE_FALLBACK_HELP,
    STATUS_HELP,
    MapOption,
    OnBadRowOption,
    SchemeOption,
    csv_tuple,
    field_map_option,
    label_words_option,
    prompt_language_tuple,
    status_option,
)
from culturekb.inference.base import MODES

__all__ = ["artemculture_options"]


def artemculture_options(
    data: Annotated[list[Path], typer.Argument(help="the data files (the same ones the KB was built from)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "kb-prior",
    modes: Annotated[str, typer.Option(help="comma list of modes")] = ",".join(MODES),
    prompt_languages: Annotated[str | None, typer.Option(help=f"{LANG_HELP}; adds the culture grid")] = None,
    judges: Annotated[str | None, typer.Option(help="two judge models for explanation alignment, comma list")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    split: Annotated[str, typer.Option(help="split to evaluate")] = "test",
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N samples")] = None,
    data_root: Annotated[Path | None, typer.Option(
        help="folder image paths are relative to; for an ArtEmis/ArtELingo CSV, the folder holding "
             "<art_style>/<painting>.jpg")] = None,
    image_template: Annotated[str | None, typer.Option(
        help="each item's image path under --data-root, a format string over its fields (metadata such as "
             "art_style, artist; painting/image_id, id, culture); ArtEmis default '{art_style}/{painting}.jpg'")
    ] = None,
    text_only: Annotated[bool, typer.Option(
        "--text-only", help="run without images on purpose: text prompts (the item's text or title), "
                            "said in the report")] = False,
    parse_fallback: Annotated[bool | None, typer.Option(help=PARSE_FALLBACK_HELP)] = None,
    label_words: Annotated[Path | None, typer.Option(help=LABEL_WORDS_HELP)] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    scheme: SchemeOption = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> ArtECultureSpec:
    """ArtECulture: accuracy per culture and mode beside the majority baseline, grids, alignment; resumable.

    With a model client (openai:M, hf:PATH, a plug-in) each item's image is sent: an ArtEmis/ArtELingo CSV's
    images are --data-root/<art_style>/<painting>.jpg (or --image-template), a JSONL's its 'image' field. A run
    whose images cannot all be found stops before any model call (exit 2); --text-only runs without them on
    purpose. The kb-prior needs no image.
    """
    return ArtECultureSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=tuple(data), kb_dir=kb, out=out_dir, model=model, modes=csv_tuple(modes, "--modes"),
        prompt_languages=prompt_language_tuple(prompt_languages, "predict_know"), base_url=base_url,
        judges=csv_tuple(judges, "--judges") or (), split=split,
        limit=limit, data_root=data_root, parse_fallback=parse_fallback, status=status_option(status),
        label_words=label_words_option(label_words), image_template=image_template, text_only=text_only,
        scheme=scheme)
