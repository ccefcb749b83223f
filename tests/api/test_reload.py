"""Admin reload: an atomic swap while requests continue; a KB that fails validation leaves the old one serving;
workers of one server follow each other's reloads through the sync file."""

from __future__ import annotations

import threading
import time

import pytest

from culturekb.kb import KnowledgeBase
from tests.api.conftest import ADMIN_KEY

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def admin_client(make_client):
    with make_client(admin_keys=[ADMIN_KEY]) as c:
        yield c


def _dragon(client) -> tuple[str, bool]:
    body = client.post("/v1/lookup", json={"concepts": ["dragon", "full moon"], "culture": "zh"}).json()
    return body["kb_version"], body["results"][0]["match"] is not None


def test_reload_to_another_kb_and_back(admin_client, kb_dirs):
    v_main = KnowledgeBase.load(kb_dirs["main"]).version
    v_other = KnowledgeBase.load(kb_dirs["other"]).version
    assert _dragon(admin_client) == (v_main, False)
    r = admin_client.post("/v1/admin/reload", json={"kb_dir": str(kb_dirs["other"])}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["previous_version"] == v_main and r.json()["kb_version"] == v_other and r.json()["changed"]
    assert admin_client.get("/readyz").json()["kb_version"] == v_other
    assert _dragon(admin_client) == (v_other, True)
    assert admin_client.get("/v1/concepts/zh/dragon").status_code == 200
    assert admin_client.get("/v1/kb").json()["stats"]["tuples"] == 9
    # without a body: reload the directory served now
    r = admin_client.post("/v1/admin/reload", headers=ADMIN)
    assert r.json()["kb_version"] == v_other and r.json()["changed"] is False


@pytest.mark.parametrize("target,message", [
    ("broken", "tuples do not match the manifest"),
    ("noindex", "no faiss index"),
    ("missing", "does not exist"),
])
def test_failed_reload_keeps_the_old_kb_serving(admin_client, kb_dirs, tmp_path, target, message):
    v_main = admin_client.get("/readyz").json()["kb_version"]
    path = kb_dirs.get(target, tmp_path / "no-such-kb")
    r = admin_client.post("/v1/admin/reload", json={"kb_dir": str(path)}, headers=ADMIN)
    assert r.status_code == 422
    assert f"reload refused, still serving KB {v_main}" in r.json()["detail"] and message in r.json()["detail"]
    assert admin_client.get("/readyz").json()["kb_version"] == v_main
    assert admin_client.post("/v1/lookup", json={"concepts": ["storm"], "culture": "en"}).status_code == 200
    metrics = admin_client.get("/metrics").text
    assert 'culturekb_reloads_total{outcome="failed"} 1.0' in metrics


def test_requests_continue_during_reloads_and_never_mix_kbs(admin_client, kb_dirs):
    """Lookups run in threads while the KB flips between two versions; each answer comes wholly from one KB."""
    v_main = KnowledgeBase.load(kb_dirs["main"]).version
    v_other = KnowledgeBase.load(kb_dirs["other"]).version
    stop = threading.Event()
    seen: list[tuple[str, bool]] = []
    errors: list[str] = []

    def hammer() -> None:
        while not stop.is_set():
            r = admin_client.post("/v1/lookup", json={"concepts": ["dragon", "full moon"], "culture": "zh"})
            if r.status_code != 200:
                errors.append(r.text)
                continue
            body = r.json()
            seen.append((body["kb_version"], body["results"][0]["match"] is not None))

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for target in ("other", "main", "other", "main"):
            r = admin_client.post("/v1/admin/reload", json={"kb_dir": str(kb_dirs[target])}, headers=ADMIN)
            assert r.status_code == 200
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    assert {v for v, _ in seen} == {v_main, v_other}
    # dragon exists only in the other KB: an answer with the other version always finds it, the main one never
    assert all(found == (version == v_other) for version, found in seen)


def test_workers_follow_a_reload_through_the_sync_file(make_client, kb_dirs, tmp_path):
    sync = tmp_path / "reload.json"
    v_other = KnowledgeBase.load(kb_dirs["other"]).version
    with make_client(admin_keys=[ADMIN_KEY], sync_file=sync, sync_interval_s=0.05) as a, \
            make_client(admin_keys=[ADMIN_KEY], sync_file=sync, sync_interval_s=0.05) as b:
        r = a.post("/v1/admin/reload", json={"kb_dir": str(kb_dirs["other"])}, headers=ADMIN)
        assert r.status_code == 200
        deadline = time.monotonic() + 60  # a deadline for a loaded machine, not a timing claim
        while b.get("/readyz").json()["kb_version"] != v_other:
            assert time.monotonic() < deadline, "the second worker did not follow the reload"
            time.sleep(0.05)
        # a worker started later (e.g. one uvicorn restarted) loads the KB the others serve now
        with make_client(sync_file=sync) as c:
            assert c.get("/readyz").json()["kb_version"] == v_other
        # a failed reload is not published: the followers keep the KB they serve
        r = a.post("/v1/admin/reload", json={"kb_dir": str(kb_dirs["broken"])}, headers=ADMIN)
        assert r.status_code == 422
        time.sleep(0.3)
        assert b.get("/readyz").json()["kb_version"] == v_other


def test_a_recalibrated_kb_is_a_change_every_worker_follows(make_client, kb_dirs, tmp_path):
    # `culturekb calibrate` writes calibration.json and keeps the KB version; the filter it chose changes what
    # is served, so the reload reports a change and the sibling worker reloads too
    import shutil

    from culturekb.kb.calibration import Calibration, write_calibration

    kb_dir = tmp_path / "kb"
    shutil.copytree(kb_dirs["main"], kb_dir)
    version = KnowledgeBase.load(kb_dir).version
    sync = tmp_path / "reload.json"

    def crane(client) -> bool:  # support 4: the calibration below (at least 5) hides it
        body = client.post("/v1/lookup", json={"concepts": ["crane"], "culture": "zh"}).json()
        return body["results"][0]["match"] is not None

    with make_client(kb_dir, admin_keys=[ADMIN_KEY], sync_file=sync, sync_interval_s=0.05) as a, \
            make_client(kb_dir, admin_keys=[ADMIN_KEY], sync_file=sync, sync_interval_s=0.05) as b:
        assert crane(a) and crane(b)
        same = a.post("/v1/admin/reload", json={}, headers=ADMIN).json()
        assert same["changed"] is False
        write_calibration(kb_dir, Calibration(kb_version=version, min_support=5))
        r = a.post("/v1/admin/reload", json={}, headers=ADMIN).json()
        assert r["changed"] is True and r["kb_version"] == r["previous_version"] == version
        assert not crane(a)
        deadline = time.monotonic() + 60  # a deadline for a loaded machine, not a timing claim
        while crane(b):
            assert time.monotonic() < deadline, "the second worker kept serving the uncalibrated filter"
            time.sleep(0.05)
