"""The endpoints over a real KB and index (FastAPI TestClient)."""

from __future__ import annotations

import pytest

from culturekb.kb import KnowledgeBase


def test_livez_and_readyz(client, kb_dirs):
    assert client.get("/livez").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["kb_version"] == KnowledgeBase.load(kb_dirs["main"]).version
    assert ready["embedder"] == "st:all-MiniLM-L6-v2"
    assert ready["cultures"] == ["en", "zh"] and ready["tuples"] == 8


def test_kb_manifest_and_stats(client):
    body = client.get("/v1/kb").json()
    assert body["manifest"]["kb_version"] == body["kb_version"]
    assert body["stats"]["cultures"]["zh"]["tuples"] == 4
    # bamboo and full moon have different dominant emotions in en and zh
    assert {d["concept"] for d in body["divergence"]} == {"bamboo", "full moon"}


def test_cultures(client):
    cultures = {c["id"]: c for c in client.get("/v1/cultures").json()["cultures"]}
    assert cultures["zh"] == {"id": "zh", "name": "Chinese", "language": "zh", "tuples": 4, "concepts": 4}
    assert cultures["en"]["tuples"] == 4


def test_lookup_exact_semantic_none_and_alias(client):
    r = client.post("/v1/lookup", json={"concepts": ["Full Moons", "stormy weather", "quantum chromodynamics",
                                                     "the"], "culture": "English", "tau": 0.5})
    assert r.status_code == 200
    body = r.json()
    assert body["culture"] == "en" and body["tau"] == 0.5
    exact, semantic, none, invalid = body["results"]
    assert exact["match"]["kind"] == "exact" and exact["match"]["tuple"]["id"] == "en::full moon"
    assert exact["normalised"] == "full moon"
    assert semantic["match"]["kind"] == "semantic" and semantic["match"]["tuple"]["concept"] == "storm"
    assert 0.5 <= semantic["match"]["score"] < 1.0
    assert none["match"] is None and none["normalised"] == "quantum chromodynamics"
    assert invalid == {"query": "the", "normalised": None, "match": None, "alternatives": []}


def test_lookup_k_alternatives_and_cross_culture(client):
    body = client.post("/v1/lookup", json={"concepts": ["storm"], "culture": "en", "k": 3, "tau": 0.1}).json()
    item = body["results"][0]
    assert item["match"]["tuple"]["concept"] == "storm"
    assert 1 <= len(item["alternatives"]) <= 2
    assert all(a["tuple"]["culture"] == "en" and a["tuple"]["concept"] != "storm" for a in item["alternatives"])
    cross = client.post("/v1/lookup", json={"concepts": ["bamboo"], "culture": "en", "cross_culture": True}).json()
    assert cross["results"][0]["match"]["tuple"]["id"] == "zh::bamboo"


def test_augment_with_concepts_and_from_prompt(client):
    r = client.post("/v1/augment", json={"prompt": "Which emotion?", "culture": "zh", "concepts": ["full moon"]})
    assert r.status_code == 200
    body = r.json()
    assert [t["id"] for t in body["tuples"]] == ["zh::full moon"]
    assert "full moon" in body["block"] and body["prompt"] == body["block"] + "\nWhich emotion?"
    assert body["matches"][0]["kind"] == "exact"
    extracted = client.post("/v1/augment", json={"prompt": "A storm over the sea at night.", "culture": "en"}).json()
    assert "storm" in extracted["concepts"]
    assert "en::storm" in {t["id"] for t in extracted["tuples"]}
    orig = client.post("/v1/augment", json={"prompt": "x", "culture": "en", "concepts": ["storm"],
                                            "mode": "orig"}).json()
    assert orig["block"] == "" and orig["tuples"] == [] and orig["prompt"] == "x"


def test_augment_needs_concepts_or_prompt(client):
    r = client.post("/v1/augment", json={"culture": "en"})
    assert r.status_code == 422
    assert "give `concepts`, or a `prompt`" in r.json()["detail"]


def test_concept_route(client):
    r = client.get("/v1/concepts/Chinese/Full%20Moons")
    assert r.status_code == 200
    assert r.json()["tuple"]["id"] == "zh::full moon" and r.json()["tuple"]["label"] == "sadness"
    missing = client.get("/v1/concepts/zh/storm")
    assert missing.status_code == 404 and "POST /v1/lookup" in missing.json()["detail"]
    unknown = client.get("/v1/concepts/klingon/storm")
    assert unknown.status_code == 404 and "en, zh" in unknown.json()["detail"]


def test_openapi_documents_every_route_with_examples(client):
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    assert set(paths) == {"/livez", "/readyz", "/metrics", "/v1/kb", "/v1/cultures", "/v1/lookup", "/v1/augment",
                          "/v1/concepts/{culture}/{concept}", "/v1/prior", "/v1/admin/reload"}
    schemas = doc["components"]["schemas"]
    for name in ("LookupRequest", "AugmentRequest", "ReloadRequest"):
        assert schemas[name]["examples"], name
    assert schemas["LookupRequest"]["properties"]["concepts"]["maxItems"] == 256  # the configured limit
    lookup = paths["/v1/lookup"]["post"]
    assert {"200", "401", "403", "413", "422"} <= set(lookup["responses"])
    assert lookup["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    assert {"BearerKey", "HeaderKey"} <= set(doc["components"]["securitySchemes"])
    assert "security" not in paths["/livez"]["get"] and "security" not in paths["/readyz"]["get"]
    assert "security" in paths["/v1/lookup"]["post"]


@pytest.mark.parametrize("name,path", [("LookupRequest", "/v1/lookup"), ("AugmentRequest", "/v1/augment")])
def test_documented_examples_succeed(client, name, path):
    examples = client.get("/openapi.json").json()["components"]["schemas"][name]["examples"]
    for example in examples:
        r = client.post(path, json=example)
        assert r.status_code == 200, (example, r.text)
