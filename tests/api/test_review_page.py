"""The review page over HTTP (FastAPI TestClient): pages, forms, filters, the ledger, agreement, apply."""

from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from culturekb.api.review_page import COOKIE, create_review_app  # noqa: E402
from culturekb.kb.ledger import append_decisions, ledger_path, make_decision, read_ledger  # noqa: E402
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple, Sample  # noqa: E402
from culturekb.kb.store import KnowledgeBase  # noqa: E402
from culturekb.workflows.review import apply_review_ledger  # noqa: E402
from tests.api.conftest import save_kb, small_tuples  # noqa: E402


def _kb(path: Path) -> Path:
    def t(concept: str, culture: str) -> KnowledgeTuple:
        return KnowledgeTuple(concept=concept, culture=culture, label="awe", distribution={"awe": 0.6, "fear": 0.4},
                              support=5, rationales=[f"the {concept} rises above the village"], status="pending",
                              flagged=True, verdicts=[JudgeVerdict(judge="lexicon", label="fear", agrees=False)])
    KnowledgeBase([t("mountain", "zh"), t("crane", "zh"), t("moon", "ja")]).save(path)
    return path


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    img = tmp_path / "m.png"
    img.write_bytes(b"\x89PNG\r\n\x1a\n")
    samples = [Sample(id="s1", culture="zh", label="awe", image=str(img), text="a painting",
                      explanations=["in the evening the mountain rises above the village like a wall"])]
    app = create_review_app(_kb(tmp_path / "kb"), samples=samples)
    return TestClient(app)


def test_the_page_asks_for_a_name_then_shows_one_tuple_with_its_evidence(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "enter your name" in page.text and 'action="/name"' in page.text
    assert "<script src" not in page.text and "http://" not in page.text.split("</style>")[0]  # nothing fetched
    res = client.post("/name", data={"reviewer": "Li Wei", "back": "/"}, follow_redirects=False)
    assert res.status_code == 303 and client.cookies.get(COOKIE) == "Li%20Wei"
    page = client.get("/?culture=zh")
    assert 'id="reviewer">Li Wei</b>' in page.text
    assert 'data-tuple="zh::crane"' in page.text and "Rationales in context" in page.text
    assert "lexicon</b>: fear (disagrees)" in page.text and "awe</span>" in page.text
    page = client.get("/", params={"culture": "zh", "t": "zh::mountain"})
    assert "<mark>the mountain rises above the village</mark>" in page.text  # the rationale in its explanation
    assert 'src="/image/0"' in page.text and client.get("/image/0").content.startswith(b"\x89PNG")
    assert client.get("/image/5").status_code == 404


def test_a_decision_is_in_the_ledger_before_the_answer_and_the_queue_moves_on(client: TestClient,
                                                                              tmp_path: Path) -> None:
    client.cookies.set(COOKIE, "ana")
    page = client.get("/", params={"culture": "zh", "t": "zh::mountain"}).text
    evidence = page.split('name="evidence" value="')[1].split('"')[0]
    res = client.post("/decide", data={"tuple_id": "zh::mountain", "evidence": evidence, "decision": "relabel",
                                       "label": "fear", "note": "a wall of fear", "culture": "zh", "status": "todo"},
                      follow_redirects=False)
    assert res.status_code == 303 and "zh%3A%3Acrane" in res.headers["location"]
    [d] = read_ledger(ledger_path(tmp_path / "kb"))
    assert (d.tuple_id, d.decision, d.label, d.reviewer, d.note, d.source) == (
        "zh::mountain", "relabel", "fear", "ana", "a wall of fear", "page")
    page = client.get(res.headers["location"]).text
    assert "relabel zh::mountain → fear saved to the ledger" in page and 'data-tuple="zh::crane"' in page
    assert "not yet decided by me (1)" in page and "Apply 1 decision(s)" in page
    decided = client.get("/", params={"status": "decided"}).text
    assert 'data-tuple="zh::mountain"' in decided and "a wall of fear" in decided


def test_bad_decisions_show_the_fix_and_write_nothing(client: TestClient, tmp_path: Path) -> None:
    client.cookies.set(COOKIE, "ana")
    for form, message in (({"tuple_id": "zh::volcano", "decision": "approve"}, "is not in the KB"),
                          ({"tuple_id": "zh::crane", "decision": "relabel", "label": "bliss"}, "unknown label"),
                          ({"tuple_id": "zh::crane", "decision": "approve", "evidence": "0" * 16}, "changed since")):
        page = client.post("/decide", data=form)
        assert message in page.text and 'role="alert"' in page.text
    assert not ledger_path(tmp_path / "kb").exists()
    assert client.post("/decide", data={"tuple_id": "zh::crane", "decision": "approve"},
                       headers={"origin": "http://evil.example"}).status_code == 403


def test_two_reviewers_agreement_and_apply_to_the_kb(client: TestClient, tmp_path: Path) -> None:
    for name, decisions in (("ana", ("approve", "reject", "approve")), ("bo", ("approve", "reject", "reject"))):
        client.cookies.set(COOKIE, name)
        for tid, dec in zip(("zh::mountain", "zh::crane", "ja::moon"), decisions, strict=True):
            client.post("/decide", data={"tuple_id": tid, "decision": dec})
    page = client.get("/agreement").text
    assert "id='kappa'" in page and "6 decisions" in page and "ana, bo" in page
    res = client.post("/apply", follow_redirects=True)
    assert "KB saved as version" in res.text
    kb = KnowledgeBase.load(tmp_path / "kb")
    assert {t.id: t.status for t in kb.tuples} == {"zh::mountain": "approved", "zh::crane": "rejected",
                                                   "ja::moon": "rejected"}
    assert "Apply" not in client.get("/").text.split("</header>")[0]


def test_v1_kb_says_the_review_counts(make_client, kb_dirs) -> None:  # type: ignore[no-untyped-def]
    review = make_client().get("/v1/kb").json()["review"]
    assert {"approved", "relabelled", "rejected", "to_recheck", "reviewers", "agreement"} <= set(review)
    assert review["decisions"] == 0 and review["rejected"] == 0


def test_v1_kb_counts_an_applied_approve_reject_and_relabel(  # type: ignore[no-untyped-def]
        make_client, default_embedder, tmp_path: Path) -> None:
    """A KB whose ledger (approve, reject, relabel) was applied: /v1/kb says approved 1, rejected 1, relabelled 1;
    before the apply the three decisions are only 'not applied'."""
    flagged = [t.model_copy(update={"status": "pending", "flagged": True}) if t.culture == "zh" else t
               for t in small_tuples()]
    kb_dir = save_kb(tmp_path / "kb", flagged, default_embedder)
    kb = KnowledgeBase.load(kb_dir)
    append_decisions(ledger_path(kb_dir), [
        make_decision(kb, "zh::crane", "approve", reviewer="ana"),
        make_decision(kb, "zh::skull", "reject", reviewer="ana", note="not a skull in this culture"),
        make_decision(kb, "zh::bamboo", "relabel", label="sadness", reviewer="ana")])
    with make_client(kb_dir) as c:  # the ledger holds them, the KB does not yet: nothing counted as done
        review = c.get("/v1/kb").json()["review"]
    assert (review["approved"], review["rejected"], review["relabelled"], review["not_applied"]) == (0, 0, 0, 3)
    res = apply_review_ledger(kb_dir)
    assert res["written"] and res["index"], res
    with make_client(kb_dir) as c:
        body = c.get("/v1/kb").json()
    review = body["review"]
    assert body["kb_version"] == res["kb_version"]
    assert (review["approved"], review["rejected"], review["relabelled"]) == (1, 1, 1), review
    assert (review["to_recheck"], review["gone"], review["not_applied"], review["decisions"]) == (0, 0, 0, 3)
    assert review["reviewers"] == ["ana"]


def test_on_a_narrow_screen_the_distribution_and_verdicts_come_first(client: TestClient) -> None:
    """The phone rules (checked in a real browser by tests/browser) come after the rules they override, and the
    cards they reorder carry the classes they name."""
    from culturekb.api._review_html import _CSS

    phone = _CSS.index("@media (max-width:760px)")
    assert phone > max(_CSS.index(".decide{position:sticky"), _CSS.index(".decide button{"),
                       _CSS.index(".decide textarea{"), _CSS.index("header{background"))
    rules = _CSS[phone:]
    assert ".grid>div{display:contents}.dist{order:1}.verdicts{order:2}.rats{order:3}" in rules
    assert ".keys{display:none}" in rules and ".decide kbd,.decide .lab{display:none}" in rules
    client.cookies.set(COOKIE, "ana")
    page = client.get("/", params={"culture": "zh", "t": "zh::mountain"}).text
    for name in ('class="card dist" id="distribution"', 'class="card verdicts" id="verdicts"', 'class="card rats"',
                 'class="card items"', 'class="card history"', 'class="muted keys"', 'class="lab"'):
        assert name in page, name
