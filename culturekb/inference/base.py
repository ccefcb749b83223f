"""Records and contracts of the inference layer: prediction modes, `Prediction`, `Predictor`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from culturekb.errors import ConfigError
from culturekb.kb.schema import Sample

__all__ = ["MODES", "Mode", "ParseStatus", "Prediction", "Predictor", "check_mode"]

Mode = Literal["orig", "know", "internal-know", "random-know", "cross-culture-know"]
MODES: tuple[str, ...] = ("orig", "know", "internal-know", "random-know", "cross-culture-know")
"""The paper's settings: zero-shot; + retrieved knowledge; chain of thought without the KB; random tuples;
tuples retrieved for another culture."""

ParseStatus = Literal["json", "text", "embedding", "invalid", "error"]
"""json: a valid JSON answer; text: found through label synonyms/translations in free text; embedding: the
optional embedding fallback of the parser chose the nearest label; invalid: no label could be read (scored
wrong); error: the model call failed (scored wrong)."""


def check_mode(mode: str) -> str:
    """`mode` itself when it is one of the paper's modes; a ConfigError naming them otherwise."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; use one of {list(MODES)}")
    return mode


class Prediction(BaseModel):
    """One model answer for one sample in one mode, with everything needed to audit it."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    culture: str
    mode: str
    label: str | None
    explanation: str = ""
    tuples_used: list[str] = Field(default_factory=list)
    raw: str = ""
    parse_status: ParseStatus = "invalid"
    parse_path: str = ""
    """Which rule of the answer parser decided (`culturekb.inference.parsing.ParsePath`): ``json``, ``lexicon``,
    ``negation-skip``, ``embedding`` or ``invalid``; "" when no answer was parsed (a failed call, an offline
    predictor, or a record written before the path was kept)."""
    parse_similarity: float | None = None
    """The embedding fallback's cosine similarity of the answer to the nearest label, when the fallback ran (also
    when it stayed below its threshold and the answer is invalid); None otherwise."""
    template_id: str = ""
    template_status: str = ""
    """Whether a native speaker checked the prompt template(s): ``checked``, ``source``, ``unchecked``, ``user``
    (a user's own file), joined with '+' when the parts differ (`culturekb.text.prompts.template_check_status`);
    "" when no prompt went to a model."""
    prompt_language: str = "en"
    language_status: str = ""
    """Whether the prompt is in the language asked for (``native``) or, a template lacking it, in English
    (``fallback:en``; `culturekb.text.prompts.resolve_prompt`); "" when no prompt went to a model."""
    probabilities: dict[str, float] | None = None
    """The predicted distribution over the scheme's labels, where the predictor has one (the KB prior does; a
    chat model's answer does not): what calibration plots and log-loss read."""
    model: str = ""
    cached: bool = False
    error: str | None = None
    with_image: bool | None = None
    """Whether the item's image went to the model with the prompt; None where no prompt went to a model (an
    offline predictor) or the record predates the field."""


@runtime_checkable
class Predictor(Protocol):
    """Predicts labels (and explanations) for samples in a mode."""

    id: str

    def predict(
        self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
    ) -> list[Prediction]:
        """One prediction per sample, in input order; failures are recorded, never dropped."""
        ...
