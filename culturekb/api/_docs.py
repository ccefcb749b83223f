"""Swagger UI (`/docs`) and ReDoc (`/redoc`) served from installed files, so the API docs work with no network.

FastAPI's own docs pages load their JavaScript and CSS from a CDN (and ReDoc its fonts from Google), so they are
blank on an offline machine. The assets come from the `fastapi-offline` package (MIT; Swagger UI is Apache-2.0,
ReDoc MIT), a dependency of the `api` extra, and are served under `/docs-static/`.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from culturekb.errors import ConfigError

STATIC_PREFIX = "/docs-static"
"""Where the Swagger UI and ReDoc files are served."""


def docs_assets_dir() -> Path:
    """The folder of the bundled Swagger UI / ReDoc files (from the `fastapi-offline` package)."""
    try:
        import fastapi_offline
    except ImportError as exc:  # pragma: no cover - part of the api extra
        raise ConfigError("the API docs need the fastapi-offline package; install culturekb[api]") from exc
    return Path(fastapi_offline.__file__).resolve().parent / "static"


def add_offline_docs(app: FastAPI) -> None:
    """Serve `/docs` and `/redoc` (and Swagger's OAuth2 redirect page) from local files.

    Create the app with ``docs_url=None, redoc_url=None`` so that FastAPI's CDN pages are not registered too.
    """
    app.mount(STATIC_PREFIX, StaticFiles(directory=docs_assets_dir()), name="docs-static")
    redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=redirect, swagger_js_url=f"{STATIC_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_PREFIX}/swagger-ui.css", swagger_favicon_url=f"{STATIC_PREFIX}/favicon.png",
        )

    @app.get(redirect, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - ReDoc",
            redoc_js_url=f"{STATIC_PREFIX}/redoc.standalone.js", redoc_favicon_url=f"{STATIC_PREFIX}/favicon.png",
            with_google_fonts=False,
        )
