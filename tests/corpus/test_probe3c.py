"""The third probe, missing images (issue 24, item 3): an image deleted after the data was read, between the load
(which checked it) and the model call, is a failed call of the run, not a crash and not a silent success; the run
exits 3 when more than --max-failed-share of its calls failed. The one-command cases (every image missing at load
time, with and without --on-bad-row skip) are rows of cases_probe3c.toml."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.testing.openai_server import ScriptedOpenAIServer

runner = CliRunner()


@pytest.fixture(autouse=True)
def _fast_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "cache"))  # one response cache per test
    monkeypatch.setenv("CULTUREKB_MODEL_BACKOFF_S", "0")


def _images_gone_after_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gone: int) -> Path:
    """Four multimodal Cedar items with real images; the first `gone` images are deleted once the loader (which
    checks every image) has read the file, before any model call."""
    import culturekb.evals.cedar.runner as cedar_runner

    root = tmp_path / "images"
    root.mkdir()
    rows = []
    for i in range(4):
        Image.new("RGB", (8, 8), (40 * i, 90, 160)).save(root / f"scene{i}.png")
        rows.append({"id": f"m{i}", "language": "en", "modality": "multimodal", "image": f"scene{i}.png",
                     "question": f"Which emotion does scene {i} stir?", "label": "fear"})
    data = tmp_path / "cedar.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    load = cedar_runner.load_cedar

    def load_then_delete(*args: Any, **kwargs: Any) -> Any:
        samples = load(*args, **kwargs)
        for i in range(gone):
            (root / f"scene{i}.png").unlink()
        return samples

    monkeypatch.setattr(cedar_runner, "load_cedar", load_then_delete)
    return data


@pytest.mark.parametrize(("gone", "share", "exit_code"), [
    (4, "0.2", 3),   # every image gone: every call failed
    (1, "0.2", 3),   # one in four: over a share of 0.2
    (1, "0.5", 0),   # one in four: within a share of 0.5
])
def test_an_image_deleted_between_load_and_predict_is_a_failed_call(
        gone: int, share: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        openai_server: Callable[..., ScriptedOpenAIServer]) -> None:
    data = _images_gone_after_load(tmp_path, monkeypatch, gone)
    server = openai_server(['{"label": "fear"}'])
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "cedar", str(data), "--out", str(out), "--modes", "orig", "--data-root",
                              str(tmp_path / "images"), "--model", "openai:m", "--base-url", server.base_url,
                              "--max-failed-share", share])
    text = " ".join(res.output.split())
    assert res.exit_code == exit_code, res.output
    assert "Traceback" not in res.output
    assert server.chat_calls == 4 - gone  # the items whose image is gone are not sent
    if exit_code == 3:  # what failed, in words: the first item's own message, not a blanked-out pattern
        assert f"{gone} of 4 predictions failed" in text and f"--max-failed-share {share}" in text, res.output
        assert f"{tmp_path / 'images' / 'scene0.png'} does not exist; fix the sample's 'image' path" in text, text
        log = (out / "run.log").read_text(encoding="utf-8")  # the console has one line; the run's log has it too
        assert f"ERROR culturekb.run: eval cedar failed: RunFailedError: eval cedar: {gone} of 4" in log, log
        assert "ERROR" not in res.output
    lines = [json.loads(line)["prediction"] for line in (out / "predictions.jsonl").read_text("utf-8").splitlines()]
    failed = [p for p in lines if p["parse_status"] == "error"]
    assert len(lines) == 4 and len(failed) == gone, lines
    assert all("does not exist" in p["error"] and p["label"] is None for p in failed), failed
