"""Prediction and concept-extraction prompts: packaged data files per mode and prompt language.

Templates live in `culturekb/data/prompts/<name>.<language>.txt` (prediction templates in the seven Cedar
languages en zh ar hi ja es sw; concept extraction in en zh ar), read through `culturekb.text.prompts.
resolve_prompt`: a language without the template gets the English one, marked ``language_status="fallback:en"``.
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
from culturekb.kb.cultures import Culture, CultureRegistry, packaged_registry
from culturekb.kb.schemes import EmotionScheme
from culturekb.text.prompts import PromptTemplate, available_prompt_languages, normalise_language, resolve_prompt

__all__ = [
    "TemplateFields",
    "TEMPLATE_FIELDS",
    "IMAGE_PREDICTION_TEMPLATES",
    "PREDICTION_TEMPLATES",
    "TEXT_PREDICTION_TEMPLATES",
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
    "predict_image_orig": TemplateFields(frozenset({"culture", "labels"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_image_know": TemplateFields(frozenset({"culture", "labels", "knowledge"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_image_internal_know": TemplateFields(frozenset({"culture", "labels"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_text_orig": TemplateFields(frozenset({"culture", "labels", "text"}), _OPTIONAL_PREDICTION_FIELDS),
    "predict_text_know": TemplateFields(frozenset({"culture", "labels", "knowledge", "text"}),
                                        _OPTIONAL_PREDICTION_FIELDS),
    "predict_text_internal_know": TemplateFields(frozenset({"culture", "labels", "text"}),
                                                 _OPTIONAL_PREDICTION_FIELDS),
    "concept_extraction": TemplateFields(frozenset(), frozenset({"max_concepts"})),
}
"""Placeholder contract per template kind. Prediction templates: {culture} (the culture's name in the prompt
language), {labels} (the label list, see `format_labels`), {knowledge} (the retrieved-knowledge block, know
templates only); optional {title} (artwork title, may be empty) and {culture_id} (registry id). Text templates
(``predict_text_*``) also require {text}: the item's text (a text dataset's ``text``, else its title words)."""

PREDICTION_TEMPLATES: dict[str, str] = {
    "orig": "predict_orig",
    "know": "predict_know",
    "internal-know": "predict_internal_know",
    "random-know": "predict_know",
    "cross-culture-know": "predict_know",
}
"""Mode -> template name. The random and cross-culture ablations change which tuples fill {knowledge}, not the
prompt, so their results differ from `know` only by the knowledge given."""

TEXT_PREDICTION_TEMPLATES: dict[str, str] = {
    "orig": "predict_text_orig",
    "know": "predict_text_know",
    "internal-know": "predict_text_internal_know",
    "random-know": "predict_text_know",
    "cross-culture-know": "predict_text_know",
}
"""Mode -> template name for an item sent without an image (a text dataset, or a ``--text-only`` run): the same
question over the item's {text}, never mentioning an artwork. Packaged in the seven prompt languages, like the
image templates; any other language reads the English file (``language_status="fallback:en"``, recorded on each
prediction)."""


IMAGE_PREDICTION_TEMPLATES: dict[str, str] = {mode: name.replace("predict_", "predict_image_")
                                               for mode, name in PREDICTION_TEMPLATES.items()}
"""Mode -> template name for an image that is not an artwork (a KB whose `stimulus_kind` is ``images`` or
``scenarios``, `culturekb.kb.stimulus`): the artwork templates with the artwork named as an image, in the seven
prompt languages."""


def _templates(text: bool, kind: str | None) -> dict[str, str]:
    if text:
        return TEXT_PREDICTION_TEMPLATES
    return PREDICTION_TEMPLATES if kind in (None, "artworks") else IMAGE_PREDICTION_TEMPLATES


def prediction_template_name(mode: str, *, text: bool = False, kind: str | None = None) -> str:
    """The template name used by `mode` (unknown modes raise ConfigError listing the modes); `text`: the variant
    for an item without an image; `kind`: the KB's stimulus kind (an image that is no artwork: the image
    variant)."""
    check_mode(mode)
    return _templates(text, kind)[mode]


def prediction_languages(mode: str, override_dir: str | Path | None = None, *, text: bool = False,
                         kind: str | None = None) -> list[str]:
    """Prompt languages with a template for `mode`: packaged ones plus those in `override_dir`."""
    return available_prompt_languages(prediction_template_name(mode, text=text, kind=kind), override_dir=override_dir)


def _load(name: str, language: str, override_dir: str | Path | None) -> PromptTemplate:
    fields = TEMPLATE_FIELDS[name]
    return resolve_prompt(name, language, required=fields.required, allowed=fields.allowed,
                          template_dir=override_dir)


def prediction_template(mode: str, language: str, override_dir: str | Path | None = None, *, text: bool = False,
                        kind: str | None = None) -> PromptTemplate:
    """The prediction template for `mode` in prompt `language`, validated for its placeholders; `text`: the
    variant for an item sent without an image (`TEXT_PREDICTION_TEMPLATES`: it shows the item's text and never
    speaks of an artwork); `kind`: the KB's stimulus kind, whose images that are no artworks get
    `IMAGE_PREDICTION_TEMPLATES`.

    A file `<name>.<language>.txt` in `override_dir` replaces the packaged one; a language with neither gets the
    English template (``language_status="fallback:en"``). Raises ConfigError for an unknown mode (listing the
    modes), a missing override folder, or a template with missing or unknown placeholders.
    """
    if mode not in MODES:
        raise ConfigError(f"unknown prediction mode {mode!r}; use one of {list(MODES)}")
    return _load(_templates(text, kind)[mode], language, override_dir)


def concept_template(language: str, override_dir: str | Path | None = None) -> PromptTemplate:
    """The concept-extraction template (placeholder {max_concepts}) in prompt `language`."""
    return _load("concept_extraction", language, override_dir)


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


def _culture(culture: str | Culture, registry: CultureRegistry | None) -> Culture:
    if isinstance(culture, Culture):
        return culture
    return (registry if registry is not None else packaged_registry()).resolve(culture)


def culture_display_name(culture: str | Culture, language: str = "en", registry: CultureRegistry | None = None
                         ) -> str:
    """How `culture` is named inside a prompt in `language` ('zh' in Chinese: '中华'; in English: 'Chinese').

    A `Culture` is named as it is described (pass the KB's, `KnowledgeBase.culture`); an id or alias is resolved
    in `registry` (a run passes its KB's; default: the packaged cultures, `packaged_registry`). The packaged
    translation of the name in `language` is used while the culture keeps its packaged name; a culture without
    one, or one a KB or cultures file renamed, is called by its registry name.
    """
    found = _culture(culture, registry)
    packaged = packaged_registry().get(found.id)
    if packaged is not None and packaged.name != found.name:
        return found.name
    return _culture_names().get(normalise_language(language), {}).get(found.id, found.name)


def prediction_values(
    culture: str | Culture,
    scheme: EmotionScheme,
    language: str,
    knowledge: str = "",
    title: str | None = None,
    registry: CultureRegistry | None = None,
    text: str | None = None,
) -> dict[str, str]:
    """Every value a prediction template may use; pass it to `PromptTemplate.fill` (`registry`: see
    `culture_display_name`; `text`: the item's text for the text templates, default its title)."""
    found = _culture(culture, registry)
    return {
        "culture": culture_display_name(found, language),
        "culture_id": found.id,
        "labels": format_labels(scheme, language),
        "knowledge": knowledge.strip(),
        "title": (title or "").strip(),
        "text": (text or title or "").strip(),
    }
