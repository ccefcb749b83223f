"""Review that lasts (issue 23): export -> decide -> import -> rebuild, through the CLI; nothing else is lost; a Label
Studio round trip with two reviewers; each kind of bad row refused with file, row and fix, nothing written."""

import csv
import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from culturekb.cli import app

runner = CliRunner()

_TEXTS = {"harbor": "the quiet harbor with boats at dusk", "storm": "a dark storm over the sea frightens me",
          "garden": "a sunny garden full of flowers", "skull": "a grim skull on the table",
          "dance": "people dance at a festival with joy"}
_EMOTIONS = ["contentment", "fear", "awe", "sadness", "amusement"]


def _run(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


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
    assert res.exit_code == 0, res.output


def test_export_decide_import_rebuild_keeps_decisions_and_files(tmp_path: Path) -> None:
    data, kb, cache = _data(tmp_path / "d.csv"), tmp_path / "kb", tmp_path / "cache"
    _build(data, kb, cache)
    res = _run("index", "--kb", kb, "--backend", "numpy")
    assert res.exit_code == 0, res.output
    (kb / "run.log").write_text("the build's log\n", encoding="utf-8")
    before = {p.relative_to(kb).as_posix() for p in kb.rglob("*") if p.is_file()}

    queue = tmp_path / "queue.csv"
    assert _run("review", "export", kb, "--out", queue).exit_code == 0
    # a queue without any decision writes nothing at all
    stamp = (kb / "manifest.json").stat().st_mtime_ns
    res = _run("review", "import", kb, queue)
    assert res.exit_code == 0 and "nothing written" in res.output, res.output
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
    assert res.exit_code == 0, res.output
    assert "numpy" in res.output.split("index re-sealed:")[1]
    after = {p.relative_to(kb).as_posix() for p in kb.rglob("*") if p.is_file()}
    assert before <= after, before - after  # index/, build_report.json/.md, run.log, the card: all still there
    assert (kb / "run.log").read_text(encoding="utf-8") == "the build's log\n"

    def info() -> dict:
        res = _run("kb", "info", kb, "--json")
        assert res.exit_code == 0, res.output
        return json.loads(res.output[res.output.index("{"):])

    def line(concept: str) -> str:
        res = _run("lookup", concept, "--culture", "zh", "--kb", kb)
        assert res.exit_code == 0, res.output
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
    assert res.exit_code == 2 and "changed since" in res.output and "row 5" in res.output
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
    assert res.exit_code == 0, res.output
    assert "40 decisions by ana, bo; reviewers' Cohen's kappa 0.8182 over 20 tuples" in res.output
    assert "reviewers' kappa 0.8182)" in res.output


def _tree(root: Path) -> dict[str, str]:
    """Every file under `root` (the KB folder, its ledger, the queue) with a hash of its bytes; the vector cache
    is left out (the build's, not the review's)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "cache" not in p.relative_to(root).parts}


def _kappa(pairs: list[tuple[str, str]]) -> float:
    """Cohen's kappa of two raters' categories, worked out here from its definition (not culturekb's)."""
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in set(first) | set(second)) / (n * n)
    return (observed - expected) / (1 - expected)


def _annotation(reviewer: str, decision: str, label: str = "", note: str = "") -> dict:
    """One Label Studio annotation as its JSON export writes it (the config culturekb exports: decision,
    corrected_label, note)."""
    result: list[dict] = [{"from_name": "decision", "to_name": "evidence", "type": "choices",
                           "value": {"choices": [decision]}}]
    if label:
        result.append({"from_name": "corrected_label", "to_name": "evidence", "type": "choices",
                       "value": {"choices": [label]}})
    if note:
        result.append({"from_name": "note", "to_name": "evidence", "type": "textarea", "value": {"text": [note]}})
    return {"completed_by": {"email": reviewer}, "created_at": "2026-01-02T03:04:05Z", "result": result,
            "was_cancelled": False}


def test_label_studio_round_trip_keeps_every_decision_of_two_reviewers(tmp_path: Path) -> None:
    data, kb, cache = _data(tmp_path / "d.csv"), tmp_path / "kb", tmp_path / "cache"
    _build(data, kb, cache)
    tasks_file = tmp_path / "tasks.json"
    res = _run("review", "export", kb, "--out", tasks_file)
    assert res.exit_code == 0, res.output
    assert "<Choices name=\"decision\"" in (tmp_path / "tasks.xml").read_text(encoding="utf-8")  # the config
    tasks = json.loads(tasks_file.read_text(encoding="utf-8"))
    assert len(tasks) >= 6 and all(t["annotations"] == [] for t in tasks)

    # ana: approve, reject, relabel to disgust in turn; bo agrees except on the first two tasks
    expected: set[tuple[str, str, str, str | None, str]] = set()
    pairs: list[tuple[str, str]] = []
    for i, task in enumerate(tasks):
        tid = task["data"]["tuple_id"]
        choice = ("approve", "reject", "relabel")[i % 3]
        other = {0: "reject", 1: "approve"}.get(i, choice)
        anns = []
        for name, dec in (("ana", choice), ("bo", other)):
            label = "disgust" if dec == "relabel" else ""
            note = f"{name} on {tid}" if i == 2 else ""
            anns.append(_annotation(name, dec, label, note))
            expected.add((tid, name, dec, label or None, note))
        pairs.append((choice + (":disgust" if choice == "relabel" else ""),
                      other + (":disgust" if other == "relabel" else "")))
        task["annotations"] = anns
    tasks_file.write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")

    res = _run("review", "import", kb, tasks_file)  # the annotators are the reviewers: no --reviewer
    assert res.exit_code == 0, res.output
    n = len(tasks)
    decided = Counter(d for _, _, d, _, _ in expected)
    assert (f"review applied: approved {decided['approve']}, rejected {decided['reject']}, relabelled "
            f"{decided['relabel']}, undecided 0, already in ledger 0") in res.output
    ledger = tmp_path / "kb.review.jsonl"
    records = [json.loads(x) for x in ledger.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 * n
    assert {(r["tuple_id"], r["reviewer"], r["decision"], r["label"], r["note"]) for r in records} == expected
    evidence = {t["data"]["tuple_id"]: t["data"]["evidence"] for t in tasks}
    assert all(r["evidence"] == evidence[r["tuple_id"]] and r["source"] == "import:tasks.json" for r in records)

    # export again (every flagged tuple: the decided ones are no longer pending) and import it unchanged
    again = tmp_path / "again.json"
    res = _run("review", "export", kb, "--out", again, "--all-flagged")
    assert res.exit_code == 0, res.output
    exported = json.loads(again.read_text(encoding="utf-8"))
    assert sum(len(t["annotations"]) for t in exported) == 2 * n  # each reviewer's decision, as an annotation
    before = _tree(tmp_path)
    res = _run("review", "import", kb, again)
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and f"already in ledger {2 * n}" in out and "nothing written" in out, out
    assert _tree(tmp_path) == before  # not one byte of the KB or the ledger changed

    kappa = round(_kappa(pairs), 4)
    assert 0 < kappa < 1  # two disagreements out of n: neither chance nor perfect
    res = _run("kb", "info", kb)
    assert res.exit_code == 0, res.output
    assert f"{2 * n} decisions by ana, bo; reviewers' Cohen's kappa {kappa} over {n} tuples" in res.output, res.output


@pytest.fixture(scope="module")
def reviewed_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built KB with a ledger already holding one decision (bo approved the third queued tuple) and the
    exported queue, in one folder; each bad-input case works on a copy."""
    root = tmp_path_factory.mktemp("reviewed")
    _build(_data(root / "d.csv"), root / "kb", root / "cache")
    queue = root / "queue.csv"
    assert _run("review", "export", root / "kb", "--out", queue).exit_code == 0
    rows = list(csv.DictReader(queue.open(encoding="utf-8")))
    first = root / "first.csv"
    _write(first, [{**rows[2], "decision": "approve"}])
    res = _run("review", "import", root / "kb", first, "--reviewer", "bo")
    assert res.exit_code == 0 and (root / "kb.review.jsonl").is_file(), res.output
    return root


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize(("edit", "says", "fix"), [
    pytest.param({"concept": "harbour", "decision": "approve"}, "the 'concept' cell reads 'harbour'",
                 "leave the tuple's cells as exported", id="edited-concept"),
    pytest.param({"label": "disgust", "decision": "approve"}, "the 'label' cell reads 'disgust'",
                 "set decision to relabel and write the new label in corrected_label", id="edited-label"),
    pytest.param({"tuple_id": "zh::volcano", "decision": "approve"}, "tuple 'zh::volcano' is not in the KB",
                 "export the queue again from this KB", id="unknown-tuple"),
    pytest.param({"decision": "relabel", "corrected_label": "bliss"}, "unknown label 'bliss'",
                 "use one of ['contentment'", id="unknown-label"),
    pytest.param({"decision": "reject", "evidence": "0" * 16}, "changed since this decision's queue",
                 "export the queue again and decide on the new evidence", id="stale-evidence"),
])
def test_a_bad_row_is_refused_with_file_row_and_fix_and_nothing_is_written(
        reviewed_kb: Path, tmp_path: Path, edit: dict[str, str], says: str, fix: str) -> None:
    root = tmp_path / "w"
    shutil.copytree(reviewed_kb, root, ignore=shutil.ignore_patterns("cache"))
    queue = root / "queue.csv"
    rows = list(csv.DictReader(queue.open(encoding="utf-8")))
    assert rows[1]["label"] != "disgust"  # else the edited label would be no edit
    rows[0]["decision"] = "approve"  # a good row before the bad one: it is not written either
    rows[1].update(edit)
    _write(queue, rows)
    before = _tree(root)
    assert "kb.review.jsonl" in before and "kb/manifest.json" in before
    res = _run("review", "import", root / "kb", queue, "--reviewer", "ana")
    out = res.output
    assert res.exit_code == 2, out
    assert f"{queue}: 1 row(s) refused, nothing was written" in out, out
    row = out.split("row 3: ", 1)[-1]  # the second row under the header
    assert "row 3: " in out and says in row and fix in row, out
    assert _tree(root) == before  # the KB folder, its ledger and the queue: byte for byte as they were
