"""What decides what a build produces (`BuildConfig`), stored in the KB manifest; re-exported by
`culturekb.builders.pipeline`."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from culturekb.builders._faults import BAD_ANSWER_POLICIES
from culturekb.builders.validation import POLICIES
from culturekb.config import DEFAULT_EMBEDDER
from culturekb.kb.stimulus import STIMULUS_KINDS

__all__ = ["BuildConfig"]


class BuildConfig(BaseModel):
    """Everything that decides what a build produces. Stored in the KB manifest."""

    model_config = ConfigDict(extra="forbid")

    scheme: str = "artemis9"
    cultures: list[str] | None = None
    split: str | None = Field(default="train", description="build from this split only; None = every sample")
    concepts: str = Field(default="text", description="concept extractor: text | precomputed | vlm | clip")
    concept_options: dict[str, Any] = Field(default_factory=dict)
    min_support: int = 2
    tie_break: str = "prior"
    rationales: str = Field(default="extractive", description="extractive | openai:MODEL")
    max_rationales: int = 4
    judges: list[str] = Field(default_factory=lambda: ["lexicon", "prototype"])
    policy: str = "pending"
    embedder: str = DEFAULT_EMBEDDER
    base_url: str | None = None
    max_concurrency: int = 8
    chunk_size: int = 64
    on_bad_answer: str = Field(default="fail", description="a model's bad answer: fail | skip | flag")
    stimulus_kind: str | None = Field(
        default=None, description="what the samples are: artworks | images | texts | scenarios; None: from the "
        "samples (culturekb.kb.stimulus.detect_stimulus_kind). Prompts, knowledge headers and reports say it")
    label_words: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict, description="language -> label -> words added to the scheme's translations (a label "
        "words file, words learned from paired label columns; culturekb.kb.label_words)")

    @field_validator("on_bad_answer", "policy")
    @classmethod
    def _one_of_its_choices(cls, v: str, info: ValidationInfo) -> str:
        choices = {"on_bad_answer": BAD_ANSWER_POLICIES, "policy": POLICIES}[str(info.field_name)]
        if v not in choices:
            raise ValueError(f"{info.field_name} must be one of {list(choices)}")
        return v

    @model_serializer(mode="wrap")
    def _without_empty_words(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``label_words`` key when there are none, so a build without them hashes and records as before."""
        data: dict[str, Any] = handler(self)
        if not data.get("label_words"):
            data.pop("label_words", None)
        if data.get("stimulus_kind") is None:
            data.pop("stimulus_kind", None)
        return data

    @field_validator("stimulus_kind")
    @classmethod
    def _known_kind(cls, v: str | None) -> str | None:
        if v is not None and v not in STIMULUS_KINDS:
            raise ValueError(f"must be one of {list(STIMULUS_KINDS)}")
        return v

    @field_validator("judges")
    @classmethod
    def _two_judges(cls, v: list[str]) -> list[str]:
        if len(v) != 2:
            raise ValueError("dual-judge validation needs exactly two judges, e.g. ['lexicon', 'prototype']")
        return v

    @field_validator("min_support", "max_rationales", "chunk_size", "max_concurrency")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("must be at least 1")
        return v
