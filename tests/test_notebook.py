"""notebooks/inspect_kb.ipynb executes offline, on the demo KB, and shows every section."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nbformat import NotebookNode

nbformat = pytest.importorskip("nbformat", reason="needs the notebook extra: pip install 'culturekb[notebook]'")
nbclient = pytest.importorskip("nbclient", reason="needs the notebook extra: pip install 'culturekb[notebook]'")

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "inspect_kb.ipynb"

pytestmark = pytest.mark.slow


def _execute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kb_dir: Path | None = None) -> NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    if kb_dir is None:
        monkeypatch.delenv("CULTUREKB_NOTEBOOK_KB", raising=False)
    else:
        monkeypatch.setenv("CULTUREKB_NOTEBOOK_KB", str(kb_dir))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's build directory lands here
    # kernel "python3": jupyter_client starts it with this interpreter (sys.executable), so the venv's packages
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def _outputs(nb: NotebookNode) -> tuple[str, int]:
    text, images = [], 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", out
            data = out.get("data", {})
            images += "image/png" in data
            text.append(data.get("text/markdown", "") + data.get("text/plain", "") + out.get("text", ""))
    return "\n".join(text), images


@pytest.mark.notebook_build  # the demo build inside the notebook takes minutes: make test-notebook and CI run it
def test_notebook_runs_on_the_demo_kb(tmp_path, monkeypatch):
    nb = _execute(tmp_path, monkeypatch)
    text, images = _outputs(nb)
    assert "Loaded the demo KB" in text
    assert "## Per culture" in text and "| en |" in text  # stats per culture
    assert "| concept | culture | support | dominant |" in text  # emotion distributions table
    # the demo KB holds six cultures (BRIGHTER): divergence comes from the loaded KB itself
    assert "Divergence in the loaded KB" in text and "| en |" in text
    div_rows = [line for line in text.splitlines() if line.count("|") >= 5 and "n=" in line and ";" in line]
    assert div_rows, "no divergent concept listed"
    assert "flagged or pending" in text and ("✔" in text or "✘" in text)  # judges' verdicts
    assert images == 3  # distributions, divergent concept, graph
    assert "missing from font" not in text, "a plot label drew as boxes (glyph missing from the plot fonts)"
    assert list(tmp_path.glob("culturekb-notebook-*/demo/kb/manifest.json"))


def _two_culture_kb(path: Path) -> Path:
    from culturekb.kb import JudgeVerdict, KnowledgeBase, KnowledgeTuple

    def t(concept, culture, dist, **kw):
        return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.get), distribution=dist,
                              support=kw.pop("support", 4), rationales=["a reason"], **kw)

    doubt = [JudgeVerdict(judge="lexicon:x", label="sadness", agrees=True),
             JudgeVerdict(judge="prototype:y", label="awe", agrees=False)]
    return KnowledgeBase([
        t("full moon", "zh", {"sadness": 0.6, "contentment": 0.4}, verdicts=doubt, flagged=True, status="pending"),
        t("full moon", "en", {"fear": 0.5, "awe": 0.3, "contentment": 0.2}),
        t("bamboo", "zh", {"contentment": 0.7, "awe": 0.3}, support=9),
    ]).save(path)


def test_notebook_uses_the_kb_from_the_environment(tmp_path, monkeypatch):
    from culturekb.kb import KnowledgeBase
    from culturekb.kb.ledger import append_decisions, ledger_path, make_decision
    from culturekb.workflows.review import apply_review_ledger

    kb_dir = _two_culture_kb(tmp_path / "kb")  # two cultures: no extra build
    kb = KnowledgeBase.load(kb_dir)  # two reviewers: one rejection both agree on, one tuple they differ on
    append_decisions(ledger_path(kb_dir), [
        make_decision(kb, "zh::bamboo", "reject", reviewer="ana"),
        make_decision(kb, "zh::bamboo", "reject", reviewer="bo"),
        make_decision(kb, "zh::full moon", "approve", reviewer="ana"),
        make_decision(kb, "zh::full moon", "relabel", label="contentment", reviewer="bo"),
    ])
    apply_review_ledger(kb_dir)
    nb = _execute(tmp_path, monkeypatch, kb_dir)
    text, images = _outputs(nb)
    assert f"`{kb_dir}` (from CULTUREKB_NOTEBOOK_KB)" in text and "Divergence in the loaded KB" in text
    # the dominant column is the tuple's label line: the reviewer's label leads, and the relabel is said
    # (no tie-break is named: the reviewer, not a tie-break, chose the label; the counts show the tie)
    assert ("| full moon | zh | contentment (2/4), sadness (2/4) (label set by a reviewer; the build had sadness) "
            "| 4 | approved | ✔ lexicon: sadness<br>✘ prototype: awe |") in text
    assert "Review: approved 0, relabelled 1, rejected 1, to re-check 0; 4 decisions by ana, bo" in text
    assert "Cohen's kappa between reviewers" in text and "{'" not in text  # words, not a Python dict
    assert images == 3
    assert not list(tmp_path.glob("culturekb-notebook-*/demo"))
