"""Review that lasts (issue 23): export -> decide -> import -> rebuild, through the CLI; nothing else is lost."""

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from culturekb.cli import app

runner = CliRunner()

_TEXTS = {"harbor": "the quiet harbor with boats at dusk", "storm": "a dark storm over the sea frightens me",
          "garden": "a sunny garden full of flowers", "skull": "a grim skull on the table",
          "dance": "people dance at a festival with joy"}
_EMOTIONS = ["contentment", "fear", "awe", "sadness", "amusement"]


def _run(*args: object) -> object:
    res = runner.invoke(app, [str(a) for a in args])
    return res


def _data(path: Path) -> Path:
    rows = ["painting,art_style,emotion,language,utterance"]
    for k, (concept, text) in enumerate(_TEXTS.items()):
        for j in range(3):
            for e, lang in ((_EMOTIONS[k], "english"), (_EMOTIONS[(k + 1) % 5], "english"),
                            (_EMOTIONS[(k + 2) % 5], "chinese"), (_EMOTIONS[(k + 2) % 5], "chinese")):
                rows.append(f"artist-{j}_{concept}-{j},Impressionism,{e},{lang},{text}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _build(data: Path, kb: Path, cache: Path) -> None:
    res = _run("build", data, "--out", kb, "--split", "all", "--judges", "lexicon,lexicon", "--policy", "pending",
               "--cache-dir", cache)
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]


def test_export_decide_import_rebuild_keeps_decisions_and_files(tmp_path: Path) -> None:
    data, kb, cache = _data(tmp_path / "d.csv"), tmp_path / "kb", tmp_path / "cache"
    _build(data, kb, cache)
    res = _run("index", "--kb", kb, "--backend", "numpy")
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    (kb / "run.log").write_text("the build's log\n", encoding="utf-8")
    before = {p.relative_to(kb).as_posix() for p in kb.rglob("*") if p.is_file()}

    queue = tmp_path / "queue.csv"
    assert _run("review", "export", kb, "--out", queue).exit_code == 0  # type: ignore[attr-defined]
    # a queue without any decision writes nothing at all
    stamp = (kb / "manifest.json").stat().st_mtime_ns
    res = _run("review", "import", kb, queue)
    assert res.exit_code == 0 and "nothing written" in res.output, res.output  # type: ignore[attr-defined]
    assert (kb / "manifest.json").stat().st_mtime_ns == stamp and not (tmp_path / "kb.review.jsonl").exists()

    rows = list(csv.DictReader(queue.open(encoding="utf-8")))
    assert len(rows) >= 3
    rows[0]["decision"], rows[1]["decision"] = "approve", "reject"
    rows[2]["decision"], rows[2]["corrected_label"] = "relabel", "sadness"
    relabelled = rows[2]["tuple_id"]
    with queue.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = _run("review", "import", kb, queue, "--reviewer", "ana")
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    assert "numpy" in res.output.split("index re-sealed:")[1]  # type: ignore[attr-defined]
    after = {p.relative_to(kb).as_posix() for p in kb.rglob("*") if p.is_file()}
    assert before <= after, before - after  # index/, build_report.json/.md, run.log, the card: all still there
    assert (kb / "run.log").read_text(encoding="utf-8") == "the build's log\n"

    def info() -> dict:
        res = _run("kb", "info", kb, "--json")
        assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
        return json.loads(res.output[res.output.index("{"):])  # type: ignore[attr-defined]

    def line(concept: str) -> str:
        res = _run("lookup", concept, "--culture", "zh", "--kb", kb)
        assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
        return res.output  # type: ignore[attr-defined,no-any-return]

    r = info()["review"]
    assert (r["approved"], r["rejected"], r["relabelled"], r["to_recheck"]) == (1, 1, 1, 0)
    concept = relabelled.split("::", 1)[1]
    shown = line(concept)  # the re-sealed index opens: the lookup goes through it
    assert "exact 1.000: sadness (" in shown and "label set by a reviewer" in shown, shown

    # rebuild into the same --out: the decisions hold
    _build(data, kb, cache)
    r = info()["review"]
    assert (r["approved"], r["rejected"], r["relabelled"], r["to_recheck"]) == (1, 1, 1, 0)
    assert "rejected 1" in (kb / "KB_CARD.md").read_text(encoding="utf-8")
    shown = line(concept)
    assert "exact 1.000: sadness (" in shown and "label set by a reviewer" in shown, shown
    report = json.loads((kb / "build_report.json").read_text(encoding="utf-8"))
    assert report["review"]["applied"] == {"approve": 1, "reject": 1, "relabel": 1}

    # a decision made on the old evidence of a tuple that has since changed is refused, nothing written
    ledger = (tmp_path / "kb.review.jsonl").read_text(encoding="utf-8")
    rows[3]["decision"], rows[3]["evidence"] = "approve", "0" * 16
    with queue.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = _run("review", "import", kb, queue, "--reviewer", "ana")
    assert res.exit_code == 2 and "changed since" in res.output and "row 5" in res.output  # type: ignore[attr-defined]
    assert (tmp_path / "kb.review.jsonl").read_text(encoding="utf-8") == ledger


def test_two_reviewers_on_the_same_20_tuples_give_a_kappa_in_kb_info(tmp_path: Path) -> None:
    from culturekb.kb.ledger import append_decisions, ledger_path, make_decision
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase([KnowledgeTuple(concept=f"c{i}", culture="zh", label="awe", distribution={"awe": 1.0},
                                       support=2, status="pending", flagged=True) for i in range(20)])
    kb.save(tmp_path / "kb")
    ds = []
    for i in range(20):
        a = "approve" if i % 2 else "reject"
        ds += [make_decision(kb, f"zh::c{i}", a, reviewer="ana"),
               make_decision(kb, f"zh::c{i}", a if i not in (3, 4) else "relabel", label="fear" if i in (3, 4)
                             else None, reviewer="bo")]
    append_decisions(ledger_path(tmp_path / "kb"), ds)
    res = _run("kb", "info", tmp_path / "kb")
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    assert "40 decisions by ana, bo; reviewers' Cohen's kappa 0.8182 over 20 tuples" in res.output  # type: ignore[attr-defined]
    assert "reviewers' kappa 0.8182)" in res.output  # type: ignore[attr-defined]
