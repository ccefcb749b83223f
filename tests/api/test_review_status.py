"""The status filter over HTTP (request field, server default, settings), the evidence of each match, the
unreviewed marker in /v1/augment, and the culture prior (/v1/prior)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from culturekb.api.settings import ApiSettings, load_api_settings
from culturekb.errors import ConfigError
from culturekb.kb import KnowledgeBase
from tests.api.conftest import _t, save_kb, small_tuples


@pytest.fixture(scope="module")
def review_kb(tmp_path_factory, default_embedder):
    """The main test KB plus a pending zh tuple (a judge disagreed, nobody reviewed it) and a rejected en one."""
    lantern = _t("lantern", "zh", {"contentment": 0.5, "awe": 0.5}, support=2, rationales=["灯笼让人想起节日"])
    skull = _t("skull", "en", {"fear": 1.0}, support=3)
    tuples = [*small_tuples(), lantern.model_copy(update={"status": "pending", "flagged": True}),
              skull.model_copy(update={"status": "rejected", "flagged": True})]
    return save_kb(tmp_path_factory.mktemp("review-kb") / "kb", tuples, default_embedder)


@pytest.fixture(scope="module")
def review_client(review_kb, default_embedder):
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with TestClient(create_app(review_kb, embedder=default_embedder), raise_server_exceptions=False) as c:
        yield c


def _lookup(client, **body):
    r = client.post("/v1/lookup", json={"concepts": ["lantern", "full moon"], "culture": "zh", **body})
    assert r.status_code == 200, r.text
    return r.json()


def test_lookup_serves_every_status_by_default_and_reports_the_evidence(review_client):
    body = _lookup(review_client)
    assert body["status_filter"] == "all"
    lantern, moon = (item["match"] for item in body["results"])
    assert lantern["review"] == "pending" and lantern["tuple"]["status"] == "pending"
    assert moon["review"] == "accepted" and moon["support"] == 5
    assert moon["distribution"] == {"sadness": 0.6, "contentment": 0.4}
    assert moon["counts"] == {"sadness": 3, "contentment": 2} and moon["summary"] == "sadness (3/5), contentment (2/5)"
    lo, hi = moon["interval"]
    assert (lo, hi) == (pytest.approx(0.2307, abs=1e-4), pytest.approx(0.8824, abs=1e-4))  # Wilson, 3 of 5


def test_lookup_status_filter_in_the_request(review_client):
    accepted = _lookup(review_client, status="accepted", tau=0.99)  # exact matches only
    assert accepted["status_filter"] == "accepted"
    assert accepted["results"][0]["match"] is None  # the pending lantern is not served
    assert accepted["results"][1]["match"]["tuple"]["id"] == "zh::full moon"
    pending = _lookup(review_client, status="pending", tau=0.99)
    assert pending["results"][0]["match"]["tuple"]["id"] == "zh::lantern" and pending["results"][1]["match"] is None
    for bad in ("reviewed", "ALL", 3):
        r = review_client.post("/v1/lookup", json={"concepts": ["lantern"], "culture": "zh", "status": bad})
        assert r.status_code == 422 and "status" in r.text, bad
    assert _lookup(review_client)["status_filter"] == "all"  # a request's filter does not stick


def test_augment_marks_unreviewed_lines_and_returns_provenance(review_client):
    r = review_client.post("/v1/augment", json={"culture": "zh", "concepts": ["full moon", "lantern"],
                                                 "prompt": "Which emotion?"})
    body = r.json()
    assert r.status_code == 200 and body["status_filter"] == "all"
    moon, lantern = body["block"].splitlines()
    assert lantern.startswith("- lantern（未经审核）：多为满足 (1/2), 敬畏 (1/2)（并列：满足、敬畏；"
                              "取该文化中最常见的满足）；满足占比的95%置信区间为9-91%。")
    assert moon.startswith("- full moon：多为悲伤 (3/5), 满足 (2/5)；") and "未经审核" not in moon
    assert [m["review"] for m in body["matches"]] == ["accepted", "pending"]
    assert body["matches"][1]["counts"] == {"contentment": 1, "awe": 1} and body["matches"][1]["support"] == 2
    prov = body["provenance"]
    assert prov["status_filter"] == "all" and [t["review"] for t in prov["tuples"]] == ["accepted", "pending"]
    assert prov["template_id"] == body["template_id"] and prov["kb_version"] == body["kb_version"]
    reviewed = review_client.post("/v1/augment", json={"culture": "zh", "concepts": ["full moon", "lantern"],
                                                        "status": "accepted"}).json()
    assert [t["id"] for t in reviewed["tuples"]] == ["zh::full moon"] and "lantern" not in reviewed["block"]
    assert reviewed["status_filter"] == "accepted" == reviewed["provenance"]["status_filter"]
    bad = review_client.post("/v1/augment", json={"culture": "zh", "concepts": ["x"], "status": "approved"})
    assert bad.status_code == 422


def test_concept_route_evidence_and_status(review_client):
    r = review_client.get("/v1/concepts/zh/lantern")
    assert r.status_code == 200 and r.json()["review"] == "pending" and r.json()["status_filter"] == "all"
    assert r.json()["summary"] == ("contentment (1/2), awe (1/2) (tied: contentment, awe; contentment chosen as the "
                                   "most frequent in the culture)")
    assert r.json()["tied"] == ["contentment", "awe"] and r.json()["tie_break"] == "prior"
    hidden = review_client.get("/v1/concepts/zh/lantern", params={"status": "accepted"})
    detail = hidden.json()["detail"]
    assert hidden.status_code == 404 and "'pending'" in detail and "?status=all" in detail
    rejected = review_client.get("/v1/concepts/en/skull")  # a reviewer rejected it: never served
    assert rejected.status_code == 404 and "rejected" in rejected.json()["detail"]
    assert review_client.get("/v1/concepts/zh/lantern", params={"status": "nope"}).status_code == 422


def test_prior_route(review_client, review_kb):
    priors = KnowledgeBase.load(review_kb).label_prior()
    body = review_client.get("/v1/prior").json()
    assert body["priors"] == priors and body["scheme"] == "artemis9" and set(body["priors"]) == {"en", "zh"}
    assert sum(body["priors"]["zh"].values()) == pytest.approx(1.0)
    one = review_client.get("/v1/prior", params={"culture": "Chinese"}).json()
    assert one["priors"] == {"zh": priors["zh"]}
    missing = review_client.get("/v1/prior", params={"culture": "klingon"})
    assert missing.status_code == 404 and "en, zh" in missing.json()["detail"]


def test_server_default_status(review_kb, default_embedder, monkeypatch):
    from fastapi.testclient import TestClient

    from culturekb.api import create_app
    from culturekb.config import load_settings

    with TestClient(create_app(review_kb, embedder=default_embedder, status="accepted")) as c:
        assert _lookup(c)["status_filter"] == "accepted"
        assert _lookup(c, status="all")["results"][0]["match"]["tuple"]["id"] == "zh::lantern"
    monkeypatch.setenv("CULTUREKB_STATUS", "pending")  # the library setting, when the server fixes none
    with TestClient(create_app(review_kb, embedder=default_embedder, library_settings=load_settings())) as c:
        assert _lookup(c)["status_filter"] == "pending"


def test_api_status_setting(monkeypatch, tmp_path):
    from culturekb.api.server import settings_to_env

    settings = load_api_settings(kb_dir=tmp_path, status="accepted")
    assert settings_to_env(settings)["CULTUREKB_API_STATUS"] == "accepted"
    monkeypatch.setenv("CULTUREKB_API_STATUS", "pending")
    assert ApiSettings().status == "pending"
    monkeypatch.setenv("CULTUREKB_API_STATUS", "reviewed")
    with pytest.raises(ConfigError, match="CULTUREKB_API_STATUS"):
        load_api_settings()


def test_serve_refuses_a_bad_status(review_kb):
    from culturekb.cli import app

    result = CliRunner().invoke(app, ["serve", "--kb", str(review_kb), "--status", "reviewed"])
    assert result.exit_code == 2 and "unknown status filter 'reviewed'" in result.output
