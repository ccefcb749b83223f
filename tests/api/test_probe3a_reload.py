"""Issue 24 item 1 over HTTP: a manifest edited under a served KB (a culture's aliases) is refused by
`/v1/admin/reload` (422, the old KB keeps serving), where it used to answer `changed: false` and serve the edit
under the same version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.api.conftest import ADMIN_KEY

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def test_reload_refuses_a_manifest_edited_in_place(make_client, kb_dirs, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(kb_dirs["main"], kb)
    with make_client(kb_dir=kb, admin_keys=[ADMIN_KEY]) as client:
        version = client.get("/readyz").json()["kb_version"]
        path = kb / "manifest.json"
        manifest = json.loads(path.read_text(encoding="utf-8"))
        culture = next(iter(manifest["culture_details"]))
        manifest["culture_details"][culture]["aliases"] = ["an alias the build never saw"]
        path.write_text(json.dumps(manifest), encoding="utf-8")
        r = client.post("/v1/admin/reload", headers=ADMIN)
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert f"still serving KB {version}" in detail and "manifest.json was edited after the KB was written" in detail
        assert client.get("/readyz").json()["kb_version"] == version
