"""The command lines of the built-in benchmarks (``culturekb eval artemculture|cedar|ricevl-vqa|ricevl-grounding``).

Each function is the `RunnerCommand.options` of one runner: typer reads its parameters as the command's
arguments and options and its docstring as the command's help; called with the parsed values, it returns the
what the benchmark's job in `culturekb.workflows` takes: one typed run spec (`culturekb.evals.specs`), comma
lists split and flags renamed. No logic beyond that belongs here: what a run does lives in the job and the
runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb.errors import ConfigError
from culturekb.evals.specs import (
    ArtECultureSpec,
    CedarSpec,
    CommetSpec,
    KnowledgeSpec,
    RiceVLGroundingSpec,
    RiceVLVQASpec,
)
from culturekb.inference.base import MODES
from culturekb.text.prompts import PROMPT_LANGUAGES, available_prompt_languages

__all__ = ["artemculture_options", "cedar_options", "ricevl_vqa_options", "ricevl_grounding_options",
           "knowledge_options", "csv_list",
           "csv_tuple", "prompt_language_tuple", "status_option"]


def csv_list(value: str | None) -> list[str] | None:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None or an empty string -> None."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def csv_tuple(value: str | None) -> tuple[str, ...] | None:
    """`csv_list` as a tuple (what the run specs hold)."""
    items = csv_list(value)
    return tuple(items) if items is not None else None


def prompt_language_tuple(value: str | None, template: str) -> tuple[str, ...] | None:
    """``--prompt-languages``: the comma list as normalised codes (``zh-CN`` -> ``zh``), each once, checked against
    the languages `template` is packaged in; a language without it raises ConfigError naming those."""
    from culturekb.inference.prompts import normalise_language

    items = csv_list(value)
    if items is None:
        return None
    langs = tuple(dict.fromkeys(normalise_language(v) for v in items))
    available = available_prompt_languages(template)
    missing = [lang for lang in langs if lang not in available]
    if missing:
        raise ConfigError(f"--prompt-languages {value!r}: no packaged {template} prompt in {missing}; the packaged "
                          f"languages are {available}. Drop those, or run the runner from Python with your own "
                          "templates")
    return langs


_OUT_HELP = "run folder (reports, resumable predictions)"
_LANG_HELP = f"comma list of prompt languages ({', '.join(PROMPT_LANGUAGES)})"
_MODEL_HELP = "kb-prior | openai:MODEL | hf:PATH | any registered model client"
_PARSE_FALLBACK_HELP = ("answers naming no label word go to the nearest label by the multilingual embedder "
                        "(default: the parse_fallback setting, off)")
_STATUS_HELP = ("which tuples are served: all (every tuple but rejected ones; pending ones marked unreviewed), "
                "accepted (reviewed only) or pending (default: the status setting, all)")


def status_option(value: str | None) -> str | None:
    """``--status``: a status filter (all, accepted, pending), checked now; None leaves it to the settings."""
    from culturekb.retrieval.filters import check_status

    return None if value is None else check_status(value.strip())


def artemculture_options(
    data: Annotated[list[Path], typer.Argument(help="the data files (the same ones the KB was built from)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "kb-prior",
    modes: Annotated[str, typer.Option(help="comma list of modes")] = ",".join(MODES),
    prompt_languages: Annotated[str | None, typer.Option(help=f"{_LANG_HELP}; adds the culture grid")] = None,
    judges: Annotated[str | None, typer.Option(help="two judge models for explanation alignment, comma list")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    split: Annotated[str, typer.Option(help="split to evaluate")] = "test",
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N samples")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    parse_fallback: Annotated[bool | None, typer.Option(help=_PARSE_FALLBACK_HELP)] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
) -> ArtECultureSpec:
    """ArtECulture: accuracy per culture and mode beside the majority baseline, grids, alignment; resumable."""
    return ArtECultureSpec(
        data=tuple(data), kb_dir=kb, out=out_dir, model=model, modes=csv_tuple(modes),
        prompt_languages=prompt_language_tuple(prompt_languages, "predict_know"), base_url=base_url,
        judges=csv_tuple(judges) or (), split=split,
        limit=limit, data_root=data_root, parse_fallback=parse_fallback, status=status_option(status))


def cedar_options(
    data: Annotated[Path, typer.Argument(help="Cedar JSONL: id, language, modality, image, narrative, question, "
                                              "label")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    kb: Annotated[Path | None, typer.Option("--kb", help="KB directory the cues come from (needed for 'know')")] = None,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "kb-prior",
    scheme: Annotated[str, typer.Option(help="label scheme: cedar14, a file, or a comma list")] = "cedar14",
    modes: Annotated[str, typer.Option(help="comma list of orig, know")] = "orig,know",
    prompt_languages: Annotated[str | None, typer.Option(help=f"{_LANG_HELP}; adds the prompt x data grid")] = None,
    languages: Annotated[str | None, typer.Option(help="only these data languages (comma list)")] = None,
    modality: Annotated[str | None, typer.Option(help="only 'multimodal' or 'text' items")] = None,
    image_concepts: Annotated[bool, typer.Option(help="also ask the model for image concepts (cue queries)")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 128,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    parse_fallback: Annotated[bool | None, typer.Option(help=_PARSE_FALLBACK_HELP)] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
) -> CedarSpec:
    """Cedar: accuracy per language, GEPP/LSEPP, GRQB/LSRQB, language grid; multimodal and text-only apart."""
    return CedarSpec(
        data=data, out=out_dir, kb_dir=kb, model=model, scheme=scheme, modes=csv_tuple(modes),
        prompt_languages=prompt_language_tuple(prompt_languages, "cedar_know"), languages=csv_tuple(languages),
        modalities=(modality,) if modality else None, base_url=base_url, image_concepts=image_concepts,
        max_tokens=max_tokens, limit=limit, data_root=data_root, parse_fallback=parse_fallback,
        status=status_option(status))


def ricevl_vqa_options(
    data: Annotated[Path, typer.Argument(help="RICE-VL VQA JSONL (id, country, category, sub_culture, image, "
                                              "question, format, answer)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    kb: Annotated[Path | None, typer.Option("--kb", help="cue KB directory")] = None,
    cue_metadata: Annotated[Path | None, typer.Option(help="RICE-VL-style metadata JSONL for the cue KB")] = None,
    model: Annotated[str, typer.Option(help=_MODEL_HELP)] = "kb-prior",
    judge: Annotated[str, typer.Option(help="SEA-LAVE judge: reference (offline) | openai:MODEL")] = "reference",
    settings: Annotated[str, typer.Option(help="comma list of global, sea, kb-cues")] = "global,sea,kb-cues",
    region: Annotated[str | None, typer.Option(help="region named by the sea framing (default Southeast Asia)")] = None,
    region_countries: Annotated[str | None, typer.Option(help="comma list of the region's countries")] = None,
    cue_scope: Annotated[str, typer.Option(help="kb-cues from any region country, or the item's (oracle)")] = "region",
    any_country: Annotated[bool, typer.Option(help="accept countries outside the culture registry")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="endpoint of the judge (default: --base-url)")] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 128,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
) -> RiceVLVQASpec:
    """RICE-VL VQA: SEA-LAVE per setting, country, category and question format; resumable."""
    return RiceVLVQASpec(
        data=data, out=out_dir, kb_dir=kb, cue_metadata=cue_metadata, model=model, judge=judge, base_url=base_url,
        judge_base_url=judge_base_url, setting_names=csv_tuple(settings), region=region,
        region_countries=csv_tuple(region_countries), cue_scope=cue_scope, allow_unknown_countries=any_country,
        max_tokens=max_tokens, limit=limit, data_root=data_root, status=status_option(status))


def commet_options(
    data: Annotated[Path, typer.Argument(help="StoryTurns JSONL: one story per line (id, culture, modality, "
                                              "category, turns: text, question, image, answer, feedback ...)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    model: Annotated[str, typer.Option(help="the chat model: openai:MODEL | hf:PATH | any registered client")],
    kb: Annotated[Path | None, typer.Option("--kb", help="KB directory the kb-cues come from")] = None,
    judge: Annotated[str, typer.Option(help="offline (string, then embedding match; weaker) | openai:MODEL")
                     ] = "offline",
    settings: Annotated[str | None, typer.Option(help="comma list of orig, kb-cues, blind (default: orig, blind "
                                                      "for image-dependent stories, kb-cues with --kb)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="endpoint of the judge (default: --base-url)")] = None,
    judge_threshold: Annotated[float, typer.Option(help="offline judge: least cosine similarity")] = 0.6,
    concurrency: Annotated[int | None, typer.Option(help="stories played at once (default: max_concurrency)")
                           ] = None,
    max_tokens: Annotated[int, typer.Option(help="new tokens per answer")] = 256,
    limit: Annotated[int | None, typer.Option(help="play only the first N stories")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
) -> CommetSpec:
    """CoMMET: multi-turn ToM stories, feedback from the judged previous answer; story and question accuracy."""
    return CommetSpec(
        data=data, out=out_dir, model=model, kb_dir=kb, judge=judge, setting_names=csv_tuple(settings),
        base_url=base_url, judge_base_url=judge_base_url, judge_threshold=judge_threshold, concurrency=concurrency,
        max_tokens=max_tokens, limit=limit, data_root=data_root, status=status_option(status))


def ricevl_grounding_options(
    data: Annotated[Path, typer.Argument(help="RICE-VL grounding JSONL (id, country, category, image, phrase, bbox)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    model: Annotated[str, typer.Option(help="full-image (offline baseline) | openai:MODEL | hf:PATH")] = "full-image",
    bbox_format: Annotated[str, typer.Option(help="gold boxes: xyxy|xywh|xyxy_norm|xywh_norm|xyxy_1000")] = "xyxy",
    scale: Annotated[str, typer.Option(help="model boxes: auto | pixels | unit | thousandths")] = "auto",
    layout: Annotated[str, typer.Option(help="model boxes: auto | xyxy | xywh")] = "auto",
    any_country: Annotated[bool, typer.Option(help="accept countries outside the culture registry")] = False,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    limit: Annotated[int | None, typer.Option(help="evaluate only the first N items")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
) -> RiceVLGroundingSpec:
    """RICE-VL grounding: mean IoU per country and category, accuracy at IoU >= 0.5; failures counted."""
    return RiceVLGroundingSpec(
        data=data, out=out_dir, model=model, base_url=base_url, bbox_format=bbox_format, scale=scale, layout=layout,
        allow_unknown_countries=any_country, limit=limit, data_root=data_root)


def knowledge_options(
    data: Annotated[list[Path], typer.Argument(help="labelled data files with a split column (CSV or JSONL)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help=_OUT_HELP)],
    split: Annotated[str, typer.Option(help="split to report on")] = "test",
    resamples: Annotated[int, typer.Option(help="bootstrap resamples per interval")] = 2000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap resamples")] = 0,
    bins: Annotated[int, typer.Option(help="confidence bins of the reliability diagram")] = 10,
    top: Annotated[int, typer.Option(help="concepts listed as helping and as hurting")] = 10,
    limit: Annotated[int | None, typer.Option(help="report on the first N samples only")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths are relative to")] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
) -> KnowledgeSpec:
    """Knowledge report: coverage, hit precision, calibration, kb-prior accuracy with intervals and paired tests."""
    return KnowledgeSpec(
        data=tuple(data), kb_dir=kb, out=out_dir, split=split, n_resamples=resamples, seed=seed, n_bins=bins,
        top_concepts=top, limit=limit, data_root=data_root, status=status_option(status))
