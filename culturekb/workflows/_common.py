"""What every job module shares: the settings and the response cache of a job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from culturekb.config import Settings

if TYPE_CHECKING:
    from culturekb.models.cache import ResponseCache

__all__ = ["job_settings", "response_cache"]


def job_settings(settings: Settings | None = None) -> Settings:
    from culturekb.config import load_settings

    return settings if settings is not None else load_settings()


def response_cache(cache_dir: str | Path | None, settings: Settings | None = None) -> ResponseCache:
    from culturekb.models.cache import ResponseCache

    return ResponseCache(Path(cache_dir or job_settings(settings).cache_dir) / "responses.sqlite")
