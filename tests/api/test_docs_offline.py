"""/docs and /redoc work with no network: their pages reference only files the server itself serves."""

from __future__ import annotations

import re

import pytest

_REF = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|(?:url|specUrl)\s*[:=]\s*["']([^"']+)["']""")
_JS_URL = re.compile(r"""["'](https?://[^"']+)["']""")


def _refs(html: str) -> list[str]:
    return [a or b for a, b in _REF.findall(html)]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_use_only_local_assets_and_they_are_served(client, page):
    resp = client.get(page)
    assert resp.status_code == 200
    html = resp.text
    assert not _JS_URL.findall(html), f"{page} still names a remote URL: {_JS_URL.findall(html)}"
    refs = _refs(html)
    assets = [r for r in refs if r.startswith("/docs-static/")]
    assert len(assets) >= 2  # the UI's script and its favicon (Swagger: and its stylesheet)
    for ref in refs:
        assert ref.startswith("/"), f"{page} references {ref}, not a file of this server"
        got = client.get(ref)
        assert got.status_code == 200, ref
        assert len(got.content) > 0
    assert "/openapi.json" in refs


def test_swagger_assets_are_real_scripts_and_styles(client):
    js = client.get("/docs-static/swagger-ui-bundle.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"] and len(js.content) > 100_000
    css = client.get("/docs-static/swagger-ui.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]
    assert client.get("/docs-static/../app.py").status_code == 404
    assert client.get("/docs/oauth2-redirect").status_code == 200
