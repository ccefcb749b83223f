"""The records of a CoMMET run: one `TurnRecord` per turn of a story, one `StoryPrediction` per story and setting
(what the checkpoint holds and the report reads)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from culturekb.inference.base import Prediction

__all__ = ["TurnRecord", "StoryPrediction"]


class TurnRecord(BaseModel):
    """What happened in one turn: the feedback shown, the answer, and the judge's verdict."""

    model_config = ConfigDict(frozen=True)

    turn: int
    """1-based."""
    category: str
    question: str
    image_sent: bool = False
    feedback_key: str = ""
    """The key of the feedback shown before this turn (right, wrong, a branch, any); "" for none."""
    previous_correct: bool | None = None
    """Whether the previous answer was judged right (None on the first turn)."""
    answer: str | None = None
    expected: list[str] = Field(default_factory=list)
    correct: bool = False
    branch: str | None = None
    judge_status: Literal["ok", "invalid", "error", "skipped"] = "skipped"
    judge_method: str = ""
    similarity: float | None = None
    reason: str = ""
    cached: bool = False
    error: str | None = None


class StoryPrediction(Prediction):
    """One story played in one setting (`label`: ``correct`` when every answer was right, else ``incorrect``)."""

    story_status: Literal["played", "failed", "skipped"] = "played"
    """played; failed (a call failed: played again on a rerun); skipped (the blind setting, text-complete)."""
    modality: str = ""
    category: str = ""
    turns: list[TurnRecord] = Field(default_factory=list)
    n_turns: int = 0
    n_correct: int = 0
    story_correct: bool = False
    cue_status: str = "not-used"
    judge: str = ""
    model_calls: int = 0
    """Model answers received while playing the story, sent to the model (cached ones in `model_cached`)."""
    model_cached: int = 0
    judge_calls: int = 0
    judge_cached: int = 0
