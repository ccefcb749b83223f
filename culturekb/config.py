"""One place for defaults: settings from the environment (prefix CULTUREKB_) and an optional TOML file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from culturekb.errors import ConfigError

__all__ = ["Settings", "load_settings"]


class Settings(BaseSettings):
    """Defaults for every command; each can be overridden by an option, the environment or a config file."""

    model_config = SettingsConfigDict(env_prefix="CULTUREKB_", extra="forbid")

    cache_dir: Path = Field(Path(".culturekb-cache"), description="step and response caches")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint for openai:MODEL backends")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable that holds the API key")
    embedder: str = Field("minilm", description="minilm | use | st:PATH | openai-embed:MODEL")
    max_concurrency: int = 8


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from `path` (TOML, table [culturekb] or top level), then environment, then explicit overrides."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file {p} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML ({exc})") from exc
        data = raw.get("culturekb", raw)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"invalid setting {'.'.join(map(str, err['loc']))}: {err['msg']}") from exc
