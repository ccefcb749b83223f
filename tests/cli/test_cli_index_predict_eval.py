"""`culturekb index`, `lookup`, `predict` and `eval artemculture` end to end on a small KB built by the CLI."""

import json

import pytest

from tests.cli_build import build_kb, write_jsonl
from tests.cli_build import run_cli as _run


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    data = root / "data.jsonl"
    rows = []
    for i in range(10):
        for culture, label in (("en", "fear"), ("zh", "awe")):
            concepts = ["storm", "ship"] if i % 2 == 0 else ["storm", "lighthouse"]
            rows.append({"id": f"img{i}::{culture}", "culture": culture, "label": label, "concepts": concepts,
                         "explanations": ["the storm at sea is frightening and vast"],
                         "split": "train" if i < 8 else "test", "metadata": {"image_id": f"img{i}"}})
    write_jsonl(data, rows)
    kb, _ = build_kb(root, data)
    return kb, data


def test_index_and_lookup(kb_dir):
    kb, _ = kb_dir
    res = _run("index", "--kb", kb)
    assert res.exit_code == 0, res.output
    assert "indexed 6 concepts" in res.output
    res = _run("lookup", "storm", "stormy weather", "banana", "--culture", "Chinese", "--kb", kb, "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows[0]["match"]["kind"] == "exact" and rows[0]["match"]["culture"] == "zh"
    assert rows[0]["match"]["label"] == "awe"
    assert rows[1]["match"] is None or rows[1]["match"]["kind"] == "semantic"
    assert rows[2]["match"] is None
    res = _run("lookup", "storm", "--culture", "zh", "--kb", kb, "--cross-culture", "--json")
    assert json.loads(res.stdout)[0]["match"]["culture"] == "en"
    res = _run("lookup", "storm", "--culture", "klingon", "--kb", kb)
    assert res.exit_code == 2 and "klingon" in res.output
    res = _run("lookup", "  ", "--culture", "en", "--kb", kb)
    assert res.exit_code == 2 and "empty" in res.output
    # an index built with another embedder is refused, not silently used
    res = _run("lookup", "storm", "--culture", "en", "--kb", kb, "--embedder", "use")
    assert res.exit_code == 2 and "embedder" in res.output.lower()


def test_predict_one_image_and_a_file(kb_dir, tmp_path):
    kb, data = kb_dir
    res = _run("predict", "--kb", kb, "--culture", "zh", "--concepts", "storm,ship")
    assert res.exit_code == 0, res.output
    pred = json.loads(res.stdout.strip().splitlines()[-1])
    assert pred["label"] == "awe" and pred["tuples_used"] and pred["mode"] == "know"
    res = _run("predict", "--kb", kb, "--samples", data, "--mode", "orig")
    assert res.exit_code == 0, res.output
    preds = [json.loads(x) for x in res.stdout.strip().splitlines()]
    assert len(preds) == 20 and all(p["tuples_used"] == [] for p in preds)
    res = _run("predict", "--kb", kb, "--culture", "zh", "--concepts", "storm", "--mode", "dreaming")
    assert res.exit_code == 2 and "unknown mode" in res.output
    res = _run("predict", "--kb", kb)
    assert res.exit_code == 2 and "--samples" in res.output


def test_eval_artemculture_and_resume(kb_dir, tmp_path):
    kb, data = kb_dir
    out = tmp_path / "run"
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--prompt-languages", "en,zh")
    assert res.exit_code == 0, res.output
    assert "majority baseline" in res.output and "Prompt language x culture" in res.output
    metrics = json.loads((out / "artemculture.json").read_text())
    assert metrics["settings"]["know"]["accuracy"] == 1.0  # storm -> fear (en) / awe (zh): every test image
    assert (out / "artemculture-accuracy.png").exists()
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--prompt-languages", "en,zh")
    assert res.exit_code == 0
    run = json.loads((out / "run.json").read_text())
    assert sum(run["n_predicted"].values()) == 0  # resumed, nothing repeated
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "r2", "--modes", "know,nope")
    assert res.exit_code == 2 and "nope" in res.output


def test_eval_reads_settings_from_config_file(kb_dir, tmp_path):
    import os
    import shutil

    kb, data = kb_dir
    own = shutil.copytree(kb, tmp_path / "kb")
    config = tmp_path / "c.toml"
    config.write_text('[culturekb]\nbackend = "numpy"\n', encoding="utf-8")
    res = _run("eval", "--config", config, "artemculture", data, "--kb", own, "--out", tmp_path / "run",
               "--modes", "know")
    assert res.exit_code == 0, res.output
    assert (own / "index" / "numpy").is_dir()  # the configured backend was built and queried
    assert "CULTUREKB_CONFIG" not in os.environ  # the file applied to that run only
    res = _run("eval", "--config", tmp_path / "missing.toml", "artemculture", data, "--kb", own, "--out",
               tmp_path / "r2")
    assert res.exit_code == 2 and "missing.toml" in res.output
