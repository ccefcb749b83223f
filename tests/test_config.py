"""Settings: explicit options > environment (CULTUREKB_*) > TOML file > defaults, for every setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from culturekb.config import (
    CONFIG_ENV,
    DEFAULT_BACKEND,
    DEFAULT_EMBEDDER,
    Settings,
    config_file,
    default_cache_dir,
    load_settings,
)
from culturekb.errors import ConfigError


@pytest.fixture(autouse=True)
def in_empty_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ./culturekb.toml leaks into these tests (tests/conftest.py clears the CULTUREKB_* variables)."""
    monkeypatch.chdir(tmp_path)


# (setting, value in the file, value in the environment, explicit value, how the file writes it)
LAYERS: list[tuple[str, Any, Any, Any]] = [
    ("embedder", "use", "st:/models/e5", "openai-embed:text-embedding-3-small"),
    ("backend", "numpy", "qdrant", "faiss:hnsw"),
    ("cache_dir", Path("file-cache"), Path("env-cache"), Path("flag-cache")),
    ("tau", 0.55, 0.6, 0.8),
    ("max_concurrency", 2, 3, 5),
    ("base_url", "http://file:1/v1", "http://env:2/v1", "http://flag:3/v1"),
    ("parse_fallback", True, False, True),
    ("status", "accepted", "pending", "all"),
]


def _toml(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{name} = {str(value).lower()}\n"
    if isinstance(value, str | Path):
        return f'{name} = "{value}"\n'
    return f"{name} = {value}\n"


@pytest.mark.parametrize(("name", "in_file", "in_env", "explicit"), LAYERS, ids=[row[0] for row in LAYERS])
def test_each_setting_follows_the_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str,
                                             in_file: Any, in_env: Any, explicit: Any) -> None:
    default = Settings.model_fields[name].get_default(call_default_factory=True)  # cache_dir: a factory
    assert getattr(load_settings(), name) == default
    assert not load_settings().is_set(name)

    config = tmp_path / "settings.toml"
    config.write_text("[culturekb]\n" + _toml(name, in_file), encoding="utf-8")
    from_file = load_settings(config)
    assert getattr(from_file, name) == in_file and from_file.is_set(name)

    monkeypatch.setenv(f"CULTUREKB_{name.upper()}", str(in_env))
    assert getattr(load_settings(config), name) == in_env  # the environment beats the file
    assert getattr(load_settings(), name) == in_env

    assert getattr(load_settings(config, **{name: explicit}), name) == explicit  # an option beats both
    assert getattr(load_settings(config, **{name: None}), name) == in_env  # an option left out does not


def test_defaults_name_the_offline_embedder_and_backend() -> None:
    settings = load_settings()
    assert (settings.embedder, settings.backend, settings.tau) == (DEFAULT_EMBEDDER, DEFAULT_BACKEND, None)
    assert settings.max_concurrency == 8
    assert settings.cache_dir == (Path(".culturekb-cache") if Path(".culturekb-cache").is_dir()
                                  else default_cache_dir())


def test_which_file_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert config_file() is None
    (tmp_path / "culturekb.toml").write_text('tau = 0.61\n', encoding="utf-8")  # top level, no table
    assert load_settings().tau == 0.61  # ./culturekb.toml when nothing names a file
    named = tmp_path / "named.toml"
    named.write_text("[culturekb]\ntau = 0.62\n", encoding="utf-8")
    monkeypatch.setenv(CONFIG_ENV, str(named))
    assert load_settings().tau == 0.62  # CULTUREKB_CONFIG beats ./culturekb.toml
    given = tmp_path / "given.toml"
    given.write_text("[culturekb]\ntau = 0.63\n", encoding="utf-8")
    assert load_settings(given).tau == 0.63  # --config beats CULTUREKB_CONFIG


def test_errors_say_where_the_bad_value_came_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[culturekb]\ntau = 3.0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tau \(from .*bad.toml\)"):
        load_settings(bad)
    bad.write_text("[culturekb]\nembeder = 'use'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.toml: unknown settings \['embeder'\].*embedder"):
        load_settings(bad)
    bad.write_text("[culturekb\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="does not exist.*--config or CULTUREKB_CONFIG"):
        load_settings(tmp_path / "missing.toml")
    monkeypatch.setenv("CULTUREKB_MAX_CONCURRENCY", "many")
    with pytest.raises(ConfigError, match="CULTUREKB_MAX_CONCURRENCY"):
        load_settings()
    monkeypatch.delenv("CULTUREKB_MAX_CONCURRENCY")
    with pytest.raises(ConfigError, match=r"max_concurrency \(from an explicit option\)"):
        load_settings(max_concurrency=0)
    with pytest.raises(ConfigError, match="unknown settings"):
        load_settings(embeder="use")
