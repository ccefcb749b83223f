"""The HTTP retrieval API: `create_app(kb_dir)` (FastAPI) and `serve(kb_dir, host, port, workers)` (uvicorn).

Endpoints: /livez, /readyz, /metrics, GET /v1/kb, GET /v1/cultures, POST /v1/lookup, POST /v1/augment,
GET /v1/concepts/{culture}/{concept}, POST /v1/admin/reload. Needs the `api` extra
(pip install 'culturekb[api]'); names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from culturekb.errors import MissingExtraError

__all__ = ["ApiSettings", "create_app", "app_from_env", "serve"]

_LAZY = {
    "ApiSettings": "culturekb.api.settings",
    "create_app": "culturekb.api.app",
    "app_from_env": "culturekb.api.app",
    "serve": "culturekb.api.server",
}

if TYPE_CHECKING:
    from culturekb.api.app import app_from_env, create_app
    from culturekb.api.server import serve
    from culturekb.api.settings import ApiSettings


def _require_api_extra() -> None:
    """Raise MissingExtraError with the pip line when FastAPI, uvicorn or prometheus-client is missing."""
    for module, package in (("fastapi", "fastapi"), ("uvicorn", "uvicorn"), ("prometheus_client", "prometheus-client")):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtraError(package, "api", "the HTTP API") from exc


def __getattr__(name: str) -> Any:
    """Import public names lazily; a missing `api` extra fails with the pip line."""
    if name in _LAZY:
        if name != "ApiSettings":
            _require_api_extra()
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'culturekb.api' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
