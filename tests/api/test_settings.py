"""Settings travel to uvicorn workers through the environment; `serve` checks the KB before any worker starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from culturekb.api.server import prepare_kb, settings_to_env
from culturekb.api.settings import ApiSettings, load_api_settings
from culturekb.errors import ConfigError, DataError, IndexError_


def test_settings_round_trip_through_the_environment(monkeypatch, tmp_path):
    settings = load_api_settings(kb_dir=tmp_path, backend="faiss", embedder="use", tau=0.6,
                                 read_keys=["read-key-123"], admin_keys=["admin-key-1", "admin-key-2"], max_batch=9,
                                 build_index=False, sync_file=tmp_path / "sync.json")
    env = settings_to_env(settings)
    assert env["CULTUREKB_API_ADMIN_KEYS"] == "admin-key-1,admin-key-2"
    for name in [n for n in list(__import__("os").environ) if n.startswith("CULTUREKB_API_")]:
        monkeypatch.delenv(name)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert ApiSettings() == settings


def test_app_from_env(monkeypatch, kb_dirs):
    from fastapi.testclient import TestClient

    from culturekb.api import app_from_env

    monkeypatch.setenv("CULTUREKB_API_KB_DIR", str(kb_dirs["main"]))
    monkeypatch.setenv("CULTUREKB_API_MAX_BATCH", "3")
    with TestClient(app_from_env()) as c:
        assert c.get("/readyz").json()["tuples"] == 8
        assert c.post("/v1/lookup", json={"concepts": ["a"] * 4, "culture": "en"}).status_code == 422


def test_bad_settings_name_the_variable(monkeypatch):
    monkeypatch.setenv("CULTUREKB_API_MAX_BATCH", "lots")
    with pytest.raises(ConfigError, match="CULTUREKB_API_MAX_BATCH"):
        load_api_settings()
    monkeypatch.delenv("CULTUREKB_API_MAX_BATCH")
    with pytest.raises(ConfigError, match="at least 8 characters"):
        load_api_settings(admin_keys="short")


def test_prepare_kb_checks_before_workers_start(kb_dirs, tmp_path):
    assert prepare_kb(load_api_settings(kb_dir=kb_dirs["main"]))["index_built"] is False
    with pytest.raises(DataError, match="do not match the manifest"):
        prepare_kb(load_api_settings(kb_dir=kb_dirs["broken"]))
    with pytest.raises(IndexError_, match="culturekb index --kb"):
        prepare_kb(load_api_settings(kb_dir=kb_dirs["noindex"], build_index=False))
    with pytest.raises(DataError, match="not a knowledge base"):
        prepare_kb(load_api_settings(kb_dir=tmp_path))


def test_create_app_needs_a_kb(default_embedder):
    from culturekb.api import create_app

    with pytest.raises(ConfigError, match="no KB to serve"):
        create_app(embedder=default_embedder)
    with pytest.raises(DataError, match="does not exist"):
        create_app(Path("/nonexistent/kb"), embedder=default_embedder)
