"""What every job module shares: the settings and the response cache of a job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from culturekb.config import Settings
from culturekb.errors import ConfigError

if TYPE_CHECKING:
    from culturekb.models.cache import ResponseCache

__all__ = ["check_base_url", "job_settings", "response_cache"]


def job_settings(settings: Settings | None = None) -> Settings:
    from culturekb.config import load_settings

    return settings if settings is not None else load_settings()


def response_cache(cache_dir: str | Path | None, settings: Settings | None = None) -> ResponseCache:
    from culturekb.models.cache import ResponseCache

    return ResponseCache(Path(cache_dir or job_settings(settings).cache_dir) / "responses.sqlite")


def check_base_url(url: str | None, option: str = "--base-url") -> str | None:
    """`url` when it is an http(s) endpoint with a host (or None); anything else (``file:///etc/passwd``, ``ftp:``,
    a bare host) raises ConfigError naming the option and the form it takes, before any work."""
    if url is None:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an unclosed "[" of an IPv6 host, a port that is not a number
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
        raise ConfigError(f"{option} {url!r} is not an http(s) endpoint; give the OpenAI-compatible server's URL, "
                          "e.g. http://localhost:8000/v1")
    return url
