"""Settings of the HTTP API: what to serve, API keys, and request limits (environment prefix CULTUREKB_API_).

Embedder, backend, tau and status are the library's settings (`culturekb.config`: CULTUREKB_*, the TOML file); the
fields of the same names here only fix them for one server (the `serve` options), and are None otherwise.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from culturekb.errors import ConfigError

__all__ = ["ApiSettings", "load_api_settings", "read_api_keys_file"]

ENV_PREFIX = "CULTUREKB_API_"


class ApiSettings(BaseSettings):
    """Everything `create_app` and `serve` need; each field can come from the environment (CULTUREKB_API_<NAME>).

    List fields read from the environment are comma-separated (CULTUREKB_API_READ_KEYS=key1,key2).
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    kb_dir: Path | None = Field(None, description="KB directory to serve (its index must be built, or build_index)")
    backend: str | None = Field(
        None, description="index backend, faiss | qdrant (None: the backend setting, else the KB's only index)"
    )
    embedder: str | None = Field(
        None, description="embedder spec, checked against the index (None: the one the index records)"
    )
    tau: float | None = Field(None, ge=0.0, le=1.0, description="default cosine threshold (None: the tau setting)")
    status: Literal["all", "accepted", "pending"] | None = Field(
        None, description="status filter of requests that do not name one: all (every tuple but rejected ones, "
        "pending ones marked unreviewed), accepted (reviewed only) or pending (None: the status setting, all)"
    )
    build_index: bool = Field(False, description="build the index at start-up when it is missing")
    read_keys: Annotated[list[str], NoDecode] = Field(default_factory=list, description="keys for the /v1 routes")
    admin_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="keys for the admin routes (they also grant read access)"
    )
    api_keys_file: Path | None = Field(None, description="TOML file with `read = [...]` and `admin = [...]` lists")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="largest request body (413 beyond)")
    max_batch: int = Field(256, ge=1, description="most concepts in one lookup or augment request (422 beyond)")
    max_concept_chars: int = Field(256, ge=8, description="longest concept string (422 beyond)")
    max_prompt_chars: int = Field(20_000, ge=100, description="longest prompt of /v1/augment (422 beyond)")
    max_k: int = Field(20, ge=1, description="largest k of /v1/lookup")
    sync_file: Path | None = Field(
        None, description="file through which the workers of one server share admin reloads (set by `serve`)"
    )
    pin_workers: bool = Field(
        True, description="with several workers, each computes on its own share of the server's cores (Linux); "
        "false: the kernel moves them over every core"
    )
    pin_dir: Path | None = Field(
        None, description="folder in which the workers of one server claim their cores (set by `serve`)"
    )
    sync_interval_s: float = Field(0.5, gt=0, description="how often a worker checks the sync file")
    torch_threads: int | None = Field(None, ge=1, description="torch threads per worker (set by `serve`)")
    batching: bool = Field(
        True, description="gather the query embeddings of concurrent /v1/lookup and /v1/augment requests into one "
        "encode call (dynamic micro-batching); false: each request encodes on its own"
    )
    batch_max_size: int = Field(128, ge=1, description="most texts in one gathered encode call")
    batch_max_wait_ms: float = Field(
        2.0, ge=0, le=1000, description="how long the first request of a batch waits for others (milliseconds)"
    )
    max_in_flight: int = Field(
        64, ge=1, description="most /v1 requests one worker serves at once; beyond, 503 with Retry-After at once "
        "(health, metrics and admin routes are never refused)"
    )
    batch_queue: int = Field(
        256, ge=1, description="most requests waiting for the encoder; beyond, 503 with Retry-After (overloaded)"
    )
    batch_encoders: int | None = Field(
        None, ge=1, description="threads encoding batches at the same time, one torch thread each (None: the CPU "
        "cores, divided among the workers by `serve`)"
    )
    reuse_port: bool = Field(
        True, description="with several workers on Linux, each listens on its own SO_REUSEPORT socket so that the "
        "kernel spreads connections over them; false: they share one socket and the first to wake takes every "
        "waiting connection"
    )
    warm_request: bool = Field(
        False, description="before the worker accepts connections, answer one real POST /v1/lookup inside it (an "
        "exact and a semantic concept, not counted in /metrics), so that the first client request pays no first-use "
        "cost; `culturekb serve` turns it on"
    )
    embed_cache_size: int = Field(
        10_000, ge=0, description="query embeddings kept in memory per worker (LRU by embedder id and text; 0: none)"
    )

    @field_validator("read_keys", "admin_keys", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @field_validator("read_keys", "admin_keys")
    @classmethod
    def _check_keys(cls, keys: list[str]) -> list[str]:
        return _check_key_list(keys)

    def keys(self) -> tuple[frozenset[str], frozenset[str]]:
        """(read keys, admin keys): the fields plus the keys file, if any."""
        read, admin = set(self.read_keys), set(self.admin_keys)
        if self.api_keys_file is not None:
            file_read, file_admin = read_api_keys_file(self.api_keys_file)
            read |= file_read
            admin |= file_admin
        return frozenset(read), frozenset(admin)


def _check_key_list(keys: list[str]) -> list[str]:
    for key in keys:
        if len(key) < 8 or any(ch.isspace() or ch == "," for ch in key):
            raise ValueError("each API key needs at least 8 characters and no spaces or commas")
    return keys


def read_api_keys_file(path: str | Path) -> tuple[set[str], set[str]]:
    """(read, admin) keys from a TOML file with the lists `read = [...]` and `admin = [...]`."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"API keys file {p} does not exist; create it or drop --api-keys-file") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{p}: not a valid TOML file ({exc}); write `read = [\"KEY\"]` and `admin = [\"KEY\"]`"
        ) from exc
    unknown = sorted(set(raw) - {"read", "admin"})
    if unknown:
        raise ConfigError(f"{p}: unknown entries {unknown}; the file holds only the lists `read` and `admin`")
    out: list[set[str]] = []
    for name in ("read", "admin"):
        keys = raw.get(name, [])
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ConfigError(f"{p}: `{name}` must be a list of strings, e.g. {name} = [\"a-long-random-key\"]")
        try:
            _check_key_list(keys)
        except ValueError as exc:
            raise ConfigError(f"{p}: `{name}`: {exc}") from exc
        out.append(set(keys))
    if not out[0] and not out[1]:
        raise ConfigError(f"{p}: no keys; list at least one key under `read` or `admin`")
    return out[0], out[1]


def load_api_settings(**overrides: Any) -> ApiSettings:
    """Settings from the environment, then explicit overrides (None values are ignored)."""
    try:
        return ApiSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(map(str, err["loc"]))
        raise ConfigError(
            f"invalid API setting {loc} ({ENV_PREFIX}{loc.upper()}): {err['msg']}"
        ) from exc
