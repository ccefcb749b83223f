"""What every rubric-following judge model shares (RICE-VL's SEA-LAVE judge, CoMMET's answer judge)."""

from __future__ import annotations

from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.models.base import ModelClient

__all__ = ["RubricJudgeModel"]


class RubricJudgeModel:
    """A judge model: its client, how often an invalid JSON verdict is re-asked, its rubric folder and sampling."""

    def __init__(self, client: ModelClient, *, retries: int = 2, template_dir: str | Path | None = None,
                 temperature: float = 0.0, max_tokens: int = 256) -> None:
        if retries < 0:
            raise ConfigError(f"judge retries must be >= 0, got {retries}")
        self.client = client
        self.retries = retries
        self.template_dir = template_dir
        self.params = {"temperature": temperature, "max_tokens": max_tokens}
