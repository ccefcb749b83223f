"""Prediction and concept-extraction prompts: packaged data files per mode and prompt language.

Templates live in `culturekb/data/prompts/<name>.<language>.txt` (prediction templates in the seven Cedar
languages en zh ar hi ja es sw; concept extraction in en zh ar).
Each template kind declares the placeholders it must use and those it may use; a template breaking that contract
fails on load, not halfway through a run. A user folder (`override_dir`) replaces any template by file name,
e.g. `my_prompts/predict_know.zh.txt`. Every `PromptTemplate` carries an id (`name.language@hash`) and the sha256
of its text, which the predictor records with each prediction.

Fill a template with `template.fill(prediction_values(...))`: it takes the values the template uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.inference.base import MODES, check_mode
from culturekb.kb.cultures import Culture, default_registry
from culturekb.kb.schemes import EmotionScheme
from culturekb.text.prompts import PromptTemplate, available_prompt_languages, load_prompt

__all__ = [
    "TemplateFields",
    "TEMPLATE_FIELDS",
    "PREDICTION_TEMPLATES",
    "prediction_template_name",
    "prediction_template",
    "prediction_languages",
    "concept_template",
    "format_labels",
    "culture_display_name",
    "prediction_values",
    "normalise_language",
]


@dataclass(frozen=True)
class TemplateFields:
    """The placeholders a template kind must use (`required`) and may use (`allowed`, beyond `required`)."""

    required: frozenset[str]
    allowed: frozenset[str] = frozenset()


_OPTIONAL_PREDICTION_FIELDS = frozenset({"title", "culture_id"})

TEMPLATE_FIELDS: dict[str, TemplateFields] = {
    "predict_orig": TemplateFields(frozenset({"culture", "labels"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_know": TemplateFields(frozenset({"culture", "labels", "knowledge"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_internal_know": TemplateFields(frozenset({"culture", "labels"}), _OPTIONAL_PREDICTION_FIELDS),
    "concept_extraction": TemplateFields(frozenset(), frozenset({"max_concepts"})),
}
"""Placeholder contract per template kind. Prediction templates: {culture} (the culture's name in the prompt
language), {labels} (the label list, see `format_labels`), {knowledge} (the retrieved-knowledge block, know
templates only); optional {title} (artwork title, may be empty) and {culture_id} (registry id)."""

PREDICTION_TEMPLATES: dict[str, str] = {
    "orig": "predict_orig",
    "know": "predict_know",
    "internal-know": "predict_internal_know",
    "random-know": "predict_know",
    "cross-culture-know": "predict_know",
}
"""Mode -> template name. The random and cross-culture ablations change which tuples fill {knowledge}, not the
prompt, so their results differ from `know` only by the knowledge given."""


def normalise_language(language: str) -> str:
    """A prompt-language code in the form the file names use: 'zh-CN' -> 'zh', ' EN ' -> 'en'."""
    code = str(language or "").strip().lower().replace("_", "-").split("-")[0]
    if not code:
        raise ConfigError("prompt language is empty; give a language code such as 'en', 'zh' or 'ar'")
    return code


def prediction_template_name(mode: str) -> str:
    """The template name used by `mode` (unknown modes raise ConfigError listing the modes)."""
    check_mode(mode)
    return PREDICTION_TEMPLATES[mode]


def prediction_languages(mode: str, override_dir: str | Path | None = None) -> list[str]:
    """Prompt languages with a template for `mode`: packaged ones plus those in `override_dir`."""
    return available_prompt_languages(prediction_template_name(mode), override_dir=override_dir)


def _load(name: str, language: str, override_dir: str | Path | None, what: str) -> PromptTemplate:
    lang = normalise_language(language)
    if override_dir is not None and not Path(override_dir).expanduser().is_dir():
        raise ConfigError(
            f"prompt override directory {override_dir} does not exist or is not a directory; create it and put "
            f"templates named <name>.<language>.txt in it (e.g. {name}.{lang}.txt), or drop override_dir"
        )
    langs = available_prompt_languages(name, override_dir=override_dir)
    if lang not in langs:
        where = "packaged" if override_dir is None else f"packaged or in {override_dir}"
        raise ConfigError(
            f"no {what} prompt in language {language!r} (template {name}.{lang}.txt); available languages "
            f"({where}): {langs}. Use one of those, or put your own {name}.{lang}.txt in a folder and pass it as "
            "override_dir"
        )
    fields = TEMPLATE_FIELDS[name]
    return load_prompt(
        name, lang, required=fields.required, allowed=fields.allowed, override_dir=override_dir
    )


def prediction_template(mode: str, language: str, override_dir: str | Path | None = None) -> PromptTemplate:
    """The prediction template for `mode` in prompt `language`, validated for its placeholders.

    A file `<name>.<language>.txt` in `override_dir` replaces the packaged one. Raises ConfigError for an
    unknown mode (listing the modes), a language without a template (listing the available languages), or a
    template with missing or unknown placeholders.
    """
    if mode not in MODES:
        raise ConfigError(f"unknown prediction mode {mode!r}; use one of {list(MODES)}")
    return _load(PREDICTION_TEMPLATES[mode], language, override_dir, f"{mode!r} prediction")


def concept_template(language: str, override_dir: str | Path | None = None) -> PromptTemplate:
    """The concept-extraction template (placeholder {max_concepts}) in prompt `language`."""
    return _load("concept_extraction", language, override_dir, "concept-extraction")


def format_labels(scheme: EmotionScheme, language: str = "en") -> str:
    """The label list for {labels}: one '- label' line each, with its translation into `language` in brackets.

    The English label stays first on each line because the templates ask for it spelled as listed; the parser
    also accepts the translations.
    """
    lang = normalise_language(language)
    lines = []
    for label in scheme.labels:
        local = scheme.translate(label, lang) if lang != "en" else label
        if local == label:
            lines.append(f"- {label}")
        elif lang in ("zh", "ja"):
            lines.append(f"- {label}（{local}）")
        else:
            lines.append(f"- {label} ({local})")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def _culture_names() -> dict[str, dict[str, str]]:
    text = resources.files("culturekb.data").joinpath("prompts/culture_names.json").read_text("utf-8")
    raw = json.loads(text)
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def culture_display_name(culture: str | Culture, language: str = "en") -> str:
    """How `culture` is named inside a prompt in `language` ('zh' in Chinese: '中华'; in English: 'Chinese').

    Cultures without a listed name in that language use their registry name.
    """
    found = culture if isinstance(culture, Culture) else default_registry().resolve(culture)
    return _culture_names().get(normalise_language(language), {}).get(found.id, found.name)


def prediction_values(
    culture: str | Culture,
    scheme: EmotionScheme,
    language: str,
    knowledge: str = "",
    title: str | None = None,
) -> dict[str, str]:
    """Every value a prediction template may use; pass it to `PromptTemplate.fill`."""
    found = culture if isinstance(culture, Culture) else default_registry().resolve(culture)
    return {
        "culture": culture_display_name(found, language),
        "culture_id": found.id,
        "labels": format_labels(scheme, language),
        "knowledge": knowledge.strip(),
        "title": (title or "").strip(),
    }
