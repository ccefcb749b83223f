"""`--status` on lookup, predict and eval; the evidence `lookup` prints; `inspect --prior`; bad status values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase, KnowledgeTuple

runner = CliRunner()


def _run(*args: object, env: dict[str, str] | None = None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def _t(concept: str, culture: str, dist: dict[str, float], support: int, status: str = "accepted") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.__getitem__), distribution=dist,
                          support=support, rationales=[f"{concept} in {culture}"], status=status,  # type: ignore[arg-type]
                          flagged=status == "pending")


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """en storm (accepted), zh storm (pending: a judge disagreed, nobody reviewed it), zh ship (accepted)."""
    root = tmp_path_factory.mktemp("status-kb")
    kb = KnowledgeBase(
        [_t("storm", "en", {"fear": 0.7, "excitement": 0.3}, 10), _t("storm", "zh", {"awe": 0.6, "fear": 0.4}, 5,
                                                                     "pending"),
         _t("ship", "zh", {"contentment": 0.75, "awe": 0.25}, 4)],
        build_config={"cultures": ["en", "zh"]},
        extra_counts={"label_prior": {"en": {"fear": 6, "sadness": 2}, "zh": {"awe": 3, "contentment": 1}}},
    )
    kb.save(root / "kb")
    assert _run("index", "--kb", root / "kb").exit_code == 0
    data = root / "data.jsonl"
    rows = [{"id": f"t{i}::zh", "culture": "zh", "label": "awe", "concepts": ["storm"], "split": "test",
             "metadata": {"image_id": f"t{i}"}} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root / "kb", data


def test_lookup_prints_counts_interval_and_review(kb_dir: tuple[Path, Path]) -> None:
    kb, _ = kb_dir
    res = _run("lookup", "storm", "--culture", "en", "--kb", kb)
    assert res.exit_code == 0, res.output
    assert "fear (7/10), excitement (3/10); 95% CI for fear: 40-89% [accepted]" in res.output
    res = _run("lookup", "storm", "--culture", "zh", "--kb", kb)
    assert "awe (3/5), fear (2/5); 95% CI for awe: 23-88% [UNREVIEWED (pending)]" in res.output
    rows = json.loads(_run("lookup", "storm", "--culture", "zh", "--kb", kb, "--json").stdout)
    m = rows[0]["match"]
    assert rows[0]["status_filter"] == "all" and m["review"] == "pending" and m["counts"] == {"awe": 3, "fear": 2}
    assert m["interval"] == [0.2307, 0.8824] and m["summary"] == "awe (3/5), fear (2/5)" and m["support"] == 5


def test_lookup_status_flag_and_setting(kb_dir: tuple[Path, Path], tmp_path: Path) -> None:
    kb, _ = kb_dir
    res = _run("lookup", "storm", "ship", "--culture", "zh", "--kb", kb, "--status", "accepted", "--tau", "0.99")
    assert res.exit_code == 0, res.output
    assert "'storm': no match in zh (status filter accepted)" in res.output and "'ship' -> 'ship'" in res.output
    rows = json.loads(_run("lookup", "storm", "ship", "--culture", "zh", "--kb", kb, "--status", "pending",
                           "--tau", "0.99", "--json").stdout)
    assert rows[0]["match"]["review"] == "pending" and rows[1]["match"] is None
    assert {r["status_filter"] for r in rows} == {"pending"}
    env_rows = json.loads(_run("lookup", "storm", "--culture", "zh", "--kb", kb, "--tau", "0.99", "--json",
                               env={"CULTUREKB_STATUS": "accepted"}).stdout)
    assert env_rows[0]["match"] is None and env_rows[0]["status_filter"] == "accepted"
    config = tmp_path / "c.toml"
    config.write_text('status = "accepted"\n', encoding="utf-8")
    over = json.loads(_run("lookup", "storm", "--culture", "zh", "--kb", kb, "--config", config, "--status", "all",
                           "--json").stdout)
    assert over[0]["match"]["review"] == "pending"  # the flag beats the file
    bad = _run("lookup", "storm", "--culture", "zh", "--kb", kb, "--status", "reviewed")
    assert bad.exit_code == 2 and "status" in bad.output and "'accepted'" in bad.output


def test_predict_status(kb_dir: tuple[Path, Path]) -> None:
    kb, _ = kb_dir
    every = json.loads(_run("predict", "--kb", kb, "--culture", "zh", "--concepts", "storm").stdout.splitlines()[-1])
    assert every["tuples_used"] == ["zh::storm"]
    res = _run("predict", "--kb", kb, "--culture", "zh", "--concepts", "storm", "--status", "accepted")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.splitlines()[-1])["tuples_used"] == []
    bad = _run("predict", "--kb", kb, "--culture", "zh", "--concepts", "storm", "--status", "maybe")
    assert bad.exit_code == 2 and "status" in bad.output


def test_eval_status(kb_dir: tuple[Path, Path], tmp_path: Path) -> None:
    kb, data = kb_dir
    runs = {}
    for status in ("all", "accepted"):
        out = tmp_path / status
        res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--modes", "know", "--status", status)
        assert res.exit_code == 0, res.output
        preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        runs[status] = {tid for p in preds for tid in p.get("prediction", p).get("tuples_used", [])}
    assert runs == {"all": {"zh::storm"}, "accepted": set()}
    for name, extra in (("artemculture", ["--kb", kb]), ("cedar", []), ("ricevl-vqa", [])):
        bad = _run("eval", name, data, *extra, "--out", tmp_path / f"bad-{name}", "--status", "reviewed")
        assert bad.exit_code == 2 and "unknown status filter 'reviewed'" in bad.output, (name, bad.output)


def test_inspect_prior(kb_dir: tuple[Path, Path]) -> None:
    kb, _ = kb_dir
    res = _run("inspect", kb, "--prior")
    assert res.exit_code == 0, res.output
    assert "en: fear 75.0%, sadness 25.0%" in res.output and "zh: awe 75.0%, contentment 25.0%" in res.output
    one = json.loads(_run("inspect", kb, "--prior", "--culture", "zh", "--json").stdout)
    assert set(one) == {"zh"} and one["zh"]["awe"] == pytest.approx(0.75) and sum(one["zh"].values()) == 1.0
    bad = _run("inspect", kb, "--prior", "--culture", "klingon")
    assert bad.exit_code == 2 and "klingon" in bad.output and "en, zh" in bad.output
