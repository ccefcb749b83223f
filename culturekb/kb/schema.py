"""The data model: `Sample`, `KnowledgeTuple`, `JudgeVerdict`, `Manifest`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Sample", "JudgeVerdict", "KnowledgeTuple", "Manifest", "ReviewStatus", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1

ReviewStatus = Literal["accepted", "pending", "approved", "rejected"]
"""accepted: both judges agreed; pending: flagged, awaiting a human; approved/rejected: a human decided."""


class Sample(BaseModel):
    """One benchmark or training item, whatever the benchmark."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    culture: str
    image: str | None = None
    text: str | None = None
    question: str | None = None
    options: list[str] | None = None
    label: str | None = None
    explanations: list[str] = Field(default_factory=list)
    concepts: list[str] | None = None
    title: str | None = None
    split: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def image_id(self) -> str:
        """The id shared by all cultures' samples of one image (used for splitting)."""
        return str(self.metadata.get("image_id", self.id))


class JudgeVerdict(BaseModel):
    """What one judge inferred from the rationales alone."""

    model_config = ConfigDict(frozen=True)

    judge: str
    label: str | None
    agrees: bool
    scores: dict[str, float] = Field(default_factory=dict)
    detail: str = ""


class KnowledgeTuple(BaseModel):
    """(concept, culture, dominant emotion, rationales) plus what makes it trustworthy and inspectable."""

    model_config = ConfigDict(frozen=True)

    concept: str
    culture: str
    label: str
    distribution: dict[str, float]
    support: int
    rationales: list[str] = Field(default_factory=list)
    verdicts: list[JudgeVerdict] = Field(default_factory=list)
    status: ReviewStatus = "accepted"
    flagged: bool = False
    provenance: dict[str, Any] = Field(default_factory=dict)

    @field_validator("support")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("support must be at least 1")
        return v

    @property
    def id(self) -> str:
        """``culture::concept``: a tuple's key, unique within a KB."""
        return f"{self.culture}::{self.concept}"

    @property
    def dominant_emotion(self) -> str:
        """The paper's name for `label`: the argmax of P(e)."""
        return self.label


class Manifest(BaseModel):
    """`manifest.json` of a KB directory."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    kb_version: str
    label_scheme: str
    labels: list[str]
    scheme: dict[str, Any] = Field(default_factory=dict)
    cultures: list[str]
    culture_details: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """id -> `Culture.to_dict` of each culture of the KB (name, language, Western flag, aliases), so a KB built with
    new cultures or a cultures file resolves them without it (empty in KBs written before this field)."""
    embedder: str | None = None
    build_config: dict[str, Any] = Field(default_factory=dict)
    counts: dict[str, Any] = Field(default_factory=dict)
    created_at: str = ""
    culturekb_version: str = ""
    manifest_digest: str | None = None
    """Hash of every other field (`culturekb.kb.store.manifest_digest`): a manifest edited after it was written is
    refused. None in KBs written before the seal (their kb_version covers tuples, scheme and label prior only)."""
