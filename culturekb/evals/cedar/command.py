"""The options of ``culturekb eval cedar``, returning the run spec (see `culturekb.evals.commands`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.evals.cedar.spec import CedarSpec
from culturekb.evals.commands import (
    LABEL_WORDS_HELP,
    LANG_HELP,
    MODEL_HELP,
    OUT_HELP,
    PARSE_FALLBACK_HELP,
    STATUS_HELP,
    MapOption,
    OnBadRowOption,
    csv_tuple,
    field_map_option,
    label_words_option,
    prompt_language_tuple,
    status_option,
)

__all__ = ["cedar_options"]


def cedar_options(
    data: Annotated[Path, typer.Argument(help="Cedar JSONL: id, language, modality, image, narrative, question, "
                                              "label")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP)],
    kb: Annotated[Path | None, typer.Option("--kb", help="KB directory the cues come from (needed for 'know')")] = None,
    model: Annotated[str, typer.Option(help=MODEL_HELP)] = "kb-prior",
    scheme: Annotated[str, typer.Option(help="label scheme: cedar14, a file, or a comma list")] = "cedar14",
    modes: Annotated[str, typer.Option(help="comma list of orig, know")] = "orig,know",
    prompt_languages: Annotated[str | None, typer.Option(help=f"{LANG_HELP}; adds the prompt x data grid")] = None,
    languages: Annotated[str | None, typer.Option(help="only these data languages (comma list)")] = None,
    modality: Annotated[str | None, typer.Option(help="only 'multimodal' or 'text' items")] = None,
    image_concepts: Annotated[bool, typer.Option(help="also ask the model for image concepts (cue queries)")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 128,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    parse_fallback: Annotated[bool | None, typer.Option(help=PARSE_FALLBACK_HELP)] = None,
    label_words: Annotated[Path | None, typer.Option(help=LABEL_WORDS_HELP)] = None,
    status: Annotated[str | None, typer.Option(help=STATUS_HELP)] = None,
    field_map: MapOption = None,
    on_bad_row: OnBadRowOption = "fail",
) -> CedarSpec:
    """Cedar: accuracy per language, GEPP/LSEPP, GRQB/LSRQB, language grid; multimodal and text-only apart."""
    return CedarSpec(
        field_map=field_map_option(field_map), on_bad_row=on_bad_row,
        data=data, out=out_dir, kb_dir=kb, model=model, scheme=scheme, modes=csv_tuple(modes, "--modes"),
        prompt_languages=prompt_language_tuple(prompt_languages, "cedar_know"),
        languages=csv_tuple(languages, "--languages"),
        modalities=(modality,) if modality else None, base_url=base_url, image_concepts=image_concepts,
        max_tokens=max_tokens, limit=limit, data_root=data_root, parse_fallback=parse_fallback,
        status=status_option(status), label_words=label_words_option(label_words))
