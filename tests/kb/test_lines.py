"""A tuple's label line leads with its own label and says a tie (issue 27 item 2): `culturekb.kb.lines`, and every
renderer that shows the line (lookup job and CLI, the knowledge block in English and Chinese, cues, the HTTP routes,
compare, inspect's Markdown and CLI, the demo's lookup table, the notebook's tables) on a KB whose dominant labels
were chosen by the build's tie-break."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from culturekb.builders.association import associate
from culturekb.kb import KnowledgeBase, KnowledgeTuple, get_scheme
from culturekb.kb.lines import kb_tie_break, tie_note, tied_labels, tuple_summary

SCHEME = get_scheme("artemis9")


def _occurrences() -> dict[str, list[tuple[str, str, str]]]:
    """en: 'barbara' on two awe and two sadness images, in a culture where sadness is more frequent than awe;
    zh: '人生' once each with contentment, fear and sadness, fear being zh's most frequent label. Both culture
    priors put the chosen label after another tied label in the scheme's order (contentment, awe, ...)."""
    en = [("barbara", "e1", "awe"), ("barbara", "e2", "awe"), ("barbara", "e3", "sadness"),
          ("barbara", "e4", "sadness"), ("storm", "e5", "fear"), ("storm", "e6", "fear"), ("storm", "e7", "awe")]
    en += [(f"filler{i}", f"f{i}", "sadness") for i in range(6)]
    zh = [("人生", "z1", "contentment"), ("人生", "z2", "fear"), ("人生", "z3", "sadness"),
          ("月亮", "z4", "sadness"), ("月亮", "z5", "sadness")]
    zh += [(f"填充{i}", f"g{i}", "fear") for i in range(6)]
    zh += [("barbara", "z6", "fear"), ("barbara", "z7", "fear")]  # aligned with en's tied barbara: a divergence
    return {"en": en, "zh": zh}


def _tuples() -> list[KnowledgeTuple]:
    return [KnowledgeTuple(concept=a.concept, culture=a.culture, label=a.label, distribution=dict(a.distribution),
                           support=a.support, rationales=[f"a reason about {a.concept}"])
            for a in associate(_occurrences(), SCHEME, min_support=1, tie_break="prior")]


@pytest.fixture(scope="module")
def tie_kb(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> Path:
    from culturekb.retrieval.index import build_index

    kb = KnowledgeBase(_tuples(), SCHEME, build_config={"cultures": ["en", "zh"], "tie_break": "prior"})
    path = tmp_path_factory.mktemp("ties") / "kb"
    kb.save(path)
    build_index(KnowledgeBase.load(path), default_embedder, "faiss")
    return path


def _by(concept: str) -> KnowledgeTuple:
    return next(t for t in _tuples() if t.concept == concept)


def test_the_build_chose_the_labels_the_tests_expect() -> None:
    assert _by("barbara").label == "sadness" and _by("人生").label == "fear"
    assert tied_labels(_by("barbara"), SCHEME.labels) == ["sadness", "awe"]
    assert tied_labels(_by("人生"), SCHEME.labels) == ["fear", "contentment", "sadness"]
    assert tied_labels(_by("storm"), SCHEME.labels) == [] and tie_note(_by("storm")) is None


def test_summary_leads_with_the_label_and_says_the_tie() -> None:
    assert tuple_summary(_by("barbara"), scheme=SCHEME, tie_break="prior") == (
        "sadness (2/4), awe (2/4) (tied: sadness, awe; sadness chosen as the most frequent in the culture)")
    assert tuple_summary(_by("storm"), scheme=SCHEME) == "fear (2/3), awe (1/3)"
    assert tuple_summary(_by("人生"), scheme=SCHEME, k=3, tie_break="scheme-order").startswith(
        "fear (1/3), contentment (1/3), sadness (1/3) (tied: fear, contentment, sadness; fear chosen by the label "
        "order")
    zh = tuple_summary(_by("人生"), scheme=SCHEME, language="zh", tie_break="prior")
    fear, contentment = SCHEME.translate("fear", "zh"), SCHEME.translate("contentment", "zh")
    assert zh.startswith(f"{fear} (1/3), {contentment} (1/3)（并列：{fear}、{contentment}、")
    # a label a reviewer gave, below the top count, still leads (and no tie is claimed)
    relabelled = _by("storm").model_copy(update={"label": "awe"})
    assert tuple_summary(relabelled, scheme=SCHEME) == "awe (1/3), fear (2/3)"


def test_a_tied_label_a_reviewer_set_names_the_reviewer_not_a_tie_break() -> None:
    tied = _by("barbara")  # sadness (2/4), awe (2/4): the build chose sadness by its tie-break
    reviewed = tied.model_copy(update={"label": "awe", "provenance": {**tied.provenance, "review": {
        "decision": "relabel", "label_before": "sadness", "reviewer": "ana"}}})
    line = tuple_summary(reviewed, scheme=SCHEME, tie_break="prior")
    assert line.startswith("awe (2/4), sadness (2/4)") and "label set by a reviewer" in line
    assert "tied:" not in line and "chosen" not in line


def test_kb_tie_break_reads_the_build_config() -> None:
    assert kb_tie_break(KnowledgeBase(_tuples(), SCHEME, build_config={"tie_break": "scheme-order"})) == "scheme-order"
    assert kb_tie_break(KnowledgeBase(_tuples(), SCHEME)) == "prior" and kb_tie_break(None) == "prior"


def _leads(text: str, label: str) -> None:
    assert text.startswith(f"{label} ("), text
    assert "tied: " in text or "并列" in text, text


def test_every_renderer_leads_with_the_dominant_label(tie_kb: Path, default_embedder: Any) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.inference.injection import CUES, KnowledgeService, cues
    from culturekb.retrieval.compare import compare_cultures, render_comparison_markdown
    from culturekb.retrieval.retriever import open_retriever
    from culturekb.workflows import lookup_concepts

    rows = lookup_concepts(tie_kb, ["barbara"], "en")
    match = rows[0]["match"]
    assert match is not None
    _leads(match["summary"], "sadness")
    assert match["tied"] == ["sadness", "awe"] and match["tie_break"] == "prior"
    done = CliRunner().invoke(app, ["lookup", "人生", "--culture", "zh", "--kb", str(tie_kb)])
    assert done.exit_code == 0, done.output
    assert ": fear (1/3), contentment (1/3) (tied: fear, contentment, sadness; fear chosen" in done.output

    retriever = open_retriever(tie_kb, default_embedder)
    service = KnowledgeService(retriever)
    en = service.inject(["barbara"], "en").text
    assert "barbara: mostly sadness (2/4), awe (2/4) (tied: sadness, awe; sadness chosen" in en
    zh = service.inject(["人生"], "zh").text
    fear = SCHEME.translate("fear", "zh")
    assert f"人生：多为{fear} (1/3)" in zh and "并列" in zh
    cue = service.inject(["barbara"], "en", template=CUES).text
    assert "barbara -> sadness (50% of 4 examples) (tied: sadness, awe; sadness chosen" in cue
    assert "barbara -> sadness (50% of 4 examples) (tied" in cues(["barbara"], "en", retriever).text

    comparison = compare_cultures(retriever, min_support=1)
    for d in comparison.to_dict()["disagreements"]:
        for side in (d["a"], d["b"]):
            assert side["describe"].startswith(f"{side['label']} (")
    assert "| sadness (2/4), awe (2/4) (tied" in render_comparison_markdown(
        compare_cultures(open_retriever(tie_kb, default_embedder), min_support=1, tau=0.0, min_margin=None), top=50)


TIED_BARBARA = "sadness (2/4), awe (2/4) (tied: sadness, awe; sadness chosen as the most frequent in the culture)"


def test_inspect_leads_with_the_dominant_label(tie_kb: Path) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.workflows.kb import inspect_kb

    markdown = inspect_kb(tie_kb)["markdown"]
    assert "## Where the cultures diverge" in markdown and TIED_BARBARA in markdown
    assert "| awe (2/4)" not in markdown
    done = CliRunner().invoke(app, ["inspect", str(tie_kb)])
    assert done.exit_code == 0, done.output
    assert TIED_BARBARA in done.output


def test_demo_lookup_table_leads_with_the_dominant_label(tie_kb: Path, default_embedder: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from culturekb import demo
    from culturekb.retrieval.retriever import open_retriever

    monkeypatch.setattr(demo, "DEMO_LOOKUPS", [("en", ("barbara",)), ("zh", ("人生",))])
    table = demo._lookups_text(SimpleNamespace(retriever=open_retriever(tie_kb, default_embedder)))  # type: ignore[arg-type]
    assert f"| en | barbara | barbara | exact | 1.000 | {TIED_BARBARA} |" in table
    assert "| zh | 人生 | 人生 | exact | 1.000 | fear (1/3), contentment (1/3), sadness (1/3) (tied: fear," in table


def test_notebook_tables_lead_with_the_dominant_label(tie_kb: Path) -> None:
    """The helper the notebook's table of best-supported concepts calls, and its flagged table's cell; the notebook
    itself runs in tests/test_notebook.py (slow), whose divergence table already uses `tuple_summary`."""
    import json

    from culturekb.kb.lines import distribution_table

    kb = KnowledgeBase.load(tie_kb)
    labels = list(kb.scheme.labels)
    table = distribution_table(sorted(kb, key=lambda t: (-t.support, t.concept)), labels, tie_break=kb_tie_break(kb))
    row = next(line for line in table.splitlines() if line.startswith("| barbara | en |"))
    assert row.startswith(f"| barbara | en | 4 | {TIED_BARBARA} | ")
    zh = next(line for line in table.splitlines() if line.startswith("| 人生 | zh |"))
    assert "| fear (1/3), contentment (1/3), sadness (1/3) (tied: fear, contentment, sadness; fear chosen" in zh
    cells = json.loads((Path(__file__).parents[2] / "notebooks" / "inspect_kb.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in cells["cells"] if c["cell_type"] == "code")
    assert "distribution_table(top, labels, tie_break=kb_tie_break(kb))" in code
    assert "{t.label}" not in code  # no table cell shows a bare label instead of the line


def test_http_routes_lead_with_the_dominant_label(tie_kb: Path, default_embedder: Any) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with TestClient(create_app(tie_kb, embedder=default_embedder), raise_server_exceptions=False) as client:
        r = client.post("/v1/lookup", json={"concepts": ["barbara"], "culture": "en"})
        assert r.status_code == 200, r.text
        match = r.json()["results"][0]["match"]
        _leads(match["summary"], "sadness")
        assert match["tied"] == ["sadness", "awe"] and match["tie_break"] == "prior"
        r = client.get("/v1/concepts/zh/人生")
        assert r.status_code == 200, r.text
        _leads(r.json()["summary"], "fear")
        r = client.post("/v1/augment", json={"concepts": ["barbara"], "culture": "en"})
        assert r.status_code == 200, r.text
        body = r.json()
        _leads(body["matches"][0]["summary"], "sadness")
        assert "mostly sadness (2/4), awe (2/4) (tied" in body["block"]


def test_inspect_and_concepts_route_align_translations(tmp_path: Path, default_embedder: Any) -> None:
    """Issue 27 item 6: `inspect` and /v1/concepts use compare's alignment (a translation pair, not only identical
    strings)."""
    from culturekb.retrieval.index import build_index
    from culturekb.workflows.kb import inspect_kb

    def t(concept: str, culture: str, dist: dict[str, float]) -> KnowledgeTuple:
        return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.__getitem__),
                              distribution=dist, support=4, rationales=["r"])

    kb = KnowledgeBase([t("thunderstorm", "en", {"fear": 0.75, "awe": 0.25}),
                        t("storm", "de", {"excitement": 0.75, "fear": 0.25}),
                        t("garden", "en", {"contentment": 1.0}), t("kitchen", "de", {"amusement": 1.0})],
                       SCHEME, build_config={"cultures": ["de", "en"]})
    path = tmp_path / "kb"
    kb.save(path)
    build_index(KnowledgeBase.load(path), default_embedder, "faiss")
    found = inspect_kb(path)
    assert [d["concepts"] for d in found["json"]["divergence"]] == [{"de": "storm", "en": "thunderstorm"}]
    assert "thunderstorm (en)" in found["markdown"] and "semantic (cos" in found["markdown"]
    # without an index: identical strings only, and the page says so
    import shutil

    shutil.rmtree(path / "index")
    bare = inspect_kb(path)
    assert bare["json"]["divergence"] == [] and "identical strings only" in bare["markdown"]

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    build_index(KnowledgeBase.load(path), default_embedder, "faiss")
    with TestClient(create_app(path, embedder=default_embedder), raise_server_exceptions=False) as client:
        r = client.get("/v1/concepts/en/thunderstorm")
        assert r.status_code == 200, r.text
        aligned = r.json()["aligned"]
        assert [(a["concept"], a["culture"], a["kind"]) for a in aligned] == [("storm", "de", "semantic")]
        assert aligned[0]["summary"].startswith("excitement (3/4)")
        divergence = client.get("/v1/kb").json()["divergence"]  # /v1/kb aligns as inspect does
        assert [d["concepts"] for d in divergence] == [{"de": "storm", "en": "thunderstorm"}]
