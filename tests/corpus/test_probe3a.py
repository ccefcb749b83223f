"""The third probe's cases that need more than one command or a local HTTP server (issue 24, items 1-4 and 9; the
one-command ones are rows of cases_probe3a.toml): knowledge that changed without a new KB version, the response
cache answering for another server, runs whose calls all failed ending with exit 0, two evals into one run folder,
and lock and log files left beside a KB. Each runs the real CLI; the servers are real HTTP
(`culturekb.testing.openai_server`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.testing.openai_server import ScriptedOpenAIServer, ScriptedReply

FIXTURES = Path(__file__).parents[1] / "fixtures"
CEDAR = FIXTURES / "cedar_ricevl" / "cedar_sample.jsonl"  # 18 text items
runner = CliRunner()


def _run(args: Sequence[object]) -> Any:
    res: Any = runner.invoke(app, [str(a) for a in args])
    res.text = " ".join(res.output.split())  # rich wraps long lines
    return res


@pytest.fixture(autouse=True)
def _fast_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "cache"))  # one response cache per test
    monkeypatch.setenv("CULTUREKB_MODEL_BACKOFF_S", "0")
    monkeypatch.setenv("CULTUREKB_MODEL_TIMEOUT_S", "0.5")


def _build(tmp: Path, out: Path, *extra: object) -> Any:
    data = tmp / "train.jsonl"
    if not data.exists():
        rows = [{"id": f"img{i}::en", "culture": "en", "label": "awe" if i % 2 else "fear",
                 "concepts": ["sea", "storm"], "split": "train"} for i in range(6)]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return _run(["build", data, "--out", out, "--concepts", "precomputed", "--judges", "lexicon,lexicon",
                 "--min-support", "1", "--cache-dir", tmp / "build_cache", *extra])


def _version(kb: Path) -> str:
    return str(json.loads((kb / "manifest.json").read_text(encoding="utf-8"))["kb_version"])


# -- 1. unversioned knowledge --------------------------------------------------------------------------------------
def test_an_edited_culture_detail_is_refused_and_a_rebuild_with_new_details_changes_the_version(tmp_path: Path
                                                                                                ) -> None:
    cultures = tmp_path / "cultures.json"
    cultures.write_text(json.dumps({"cultures": [{"id": "en", "name": "English", "aliases": ["anglo"]}]}),
                        encoding="utf-8")
    assert (res := _build(tmp_path, tmp_path / "kb", "--cultures-file", cultures)).exit_code == 0, res.output
    manifest = tmp_path / "kb" / "manifest.json"
    text = manifest.read_text(encoding="utf-8")
    assert '"anglo"' in text
    manifest.write_text(text.replace('"anglo"', '"saxon"'), encoding="utf-8")  # an alias: lookups change
    res = _run(["kb", "info", tmp_path / "kb"])
    assert res.exit_code == 2 and "manifest.json was edited after the KB was written" in res.text, res.output
    assert "culturekb build" in res.text and "Traceback" not in res.output
    # the same change made the right way (a rebuild with the culture's new alias) is a new version
    cultures.write_text(json.dumps({"cultures": [{"id": "en", "name": "English", "aliases": ["saxon"]}]}),
                        encoding="utf-8")
    assert _build(tmp_path, tmp_path / "kb2", "--cultures-file", cultures).exit_code == 0
    assert _version(tmp_path / "kb2") != json.loads(text)["kb_version"]


def test_an_edited_calibration_is_refused(tmp_path: Path) -> None:
    from culturekb.kb.calibration import Calibration, write_calibration

    assert _build(tmp_path, tmp_path / "kb", "--no-calibrate").exit_code == 0
    kb = tmp_path / "kb"
    write_calibration(kb, Calibration(kb_version=_version(kb), alpha=2.0))
    args = ["predict", "--kb", kb, "--concepts", "sea", "--culture", "en"]
    assert (res := _run(args)).exit_code == 0, res.output
    path = kb / "calibration.json"
    cal = json.loads(path.read_text(encoding="utf-8"))
    cal["alpha"] = 1e9  # the probe's plausible edit
    path.write_text(json.dumps(cal), encoding="utf-8")
    res = _run(args)
    assert res.exit_code == 2 and "calibration.json was edited after `culturekb calibrate` wrote it" in res.text
    assert "culturekb calibrate" in res.text and "Traceback" not in res.output


def test_one_scheme_in_two_checkouts_gives_one_kb_version(tmp_path: Path) -> None:
    versions = []
    for where in ("a", "b"):
        folder = tmp_path / where
        folder.mkdir()
        scheme = folder / "scheme.txt"
        scheme.write_text("awe\nfear\ncontentment\n", encoding="utf-8")
        assert (res := _build(tmp_path, folder / "kb", "--scheme", scheme, "--no-calibrate")).exit_code == 0, \
            res.output
        versions.append(_version(folder / "kb"))
    assert versions[0] == versions[1]


# -- 2. the response cache and the endpoint ------------------------------------------------------------------------
def _eval(out: Path, base_url: str, *extra: str) -> Any:
    return _run(["eval", "cedar", CEDAR, "--out", out, "--modes", "orig", "--model", "openai:m", "--base-url",
                 base_url, *extra])


def test_another_server_is_not_answered_from_the_first_servers_cache(
        tmp_path: Path, openai_server: Callable[..., ScriptedOpenAIServer]) -> None:
    first = openai_server(['{"label": "fear"}'])
    second = openai_server(['{"label": "anger"}'])
    assert (res := _eval(tmp_path / "one", first.base_url, "--limit", "4")).exit_code == 0, res.output
    assert (res := _eval(tmp_path / "two", second.base_url, "--limit", "4")).exit_code == 0, res.output
    assert first.chat_calls == 4 and second.chat_calls == 4  # asked, not answered from the first server's cache
    labels = {json.loads(line)["prediction"]["label"]
              for line in (tmp_path / "two" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()}
    assert labels == {"anger"}


# -- 3. runs whose calls fail ------------------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("script", [
    "refused",
    [(500, '{"error": {"message": "boom"}}')],
    [(200, '{"choices": [{"message": {"content": "{\\"label')],  # truncated JSON
    [(200, "<html><body>Welcome to nginx!</body></html>")],
    [ScriptedReply(content='{"label": "fear"}', delay_s=2.0)],  # every call times out (0.5 s)
], ids=["connection_refused", "always_500", "truncated_json", "html_200", "timeouts"])
def test_a_run_whose_calls_all_fail_exits_3_and_says_why(
        script: Any, tmp_path: Path, openai_server: Callable[..., ScriptedOpenAIServer]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1" if script == "refused" else openai_server(script).base_url
    res = _eval(tmp_path / "run", url, "--limit", "3")
    assert res.exit_code == 3, res.output
    assert "3 of 3 predictions failed" in res.text and "--max-failed-share 0.2" in res.text, res.output
    assert "Traceback" not in res.output
    assert (tmp_path / "run" / "run.json").is_file()  # the reports are written, the failures listed there


def test_max_failed_share_sets_how_many_failures_a_run_may_have(
        tmp_path: Path, openai_server: Callable[..., ScriptedOpenAIServer]) -> None:
    # one call in three fails (500 is retried, so the failing item gets only 500s: a responder by item)
    def answer(body: dict[str, Any]) -> Any:
        return (500, "{}") if "thirty-something" in json.dumps(body) else '{"label": "fear"}'

    server = openai_server(answer)
    assert _eval(tmp_path / "strict", server.base_url, "--limit", "3").exit_code == 3
    res = _eval(tmp_path / "lenient", server.base_url, "--limit", "3", "--max-failed-share", "0.5")
    assert res.exit_code == 0, res.output


# -- 4. one writer per run folder ----------------------------------------------------------------------------------
def test_a_second_eval_into_the_same_out_is_refused_while_the_first_runs(
        tmp_path: Path, openai_server: Callable[..., ScriptedOpenAIServer]) -> None:
    out = tmp_path / "run"
    server = openai_server(['{"label": "fear"}'])
    code = textwrap.dedent(f"""
        from culturekb._io import exclusive_lock
        with exclusive_lock({str(out)!r}, "eval cedar", "wait"):
            print("locked", flush=True)
            input()
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        res = _eval(out, server.base_url, "--limit", "2")
        assert res.exit_code == 2 and "another process" in res.text and "another --out" in res.text, res.output
        assert server.chat_calls == 0 and not (out / "predictions.jsonl").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    assert _eval(out, server.base_url, "--limit", "2").exit_code == 0  # the lock goes with its holder
    assert not (tmp_path / ".run.lock").exists()  # and the finished run leaves no lock file


# -- 9. leftovers ------------------------------------------------------------------------------------------------
def test_a_build_leaves_no_lock_or_log_beside_its_kb_finished_failed_or_resumed(tmp_path: Path) -> None:
    kb = tmp_path / "kb"

    def beside() -> list[str]:
        return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".kb"))

    assert _build(tmp_path, kb, "--no-calibrate").exit_code == 0
    assert beside() == [] and (kb / "run.log").is_file()
    # what a build killed with SIGKILL leaves: its lock file (a dead pid) and its log beside the folder
    (tmp_path / ".kb.lock").write_text("999999", encoding="utf-8")
    (tmp_path / ".kb.run.log").write_text("... build started\n", encoding="utf-8")
    shutil.rmtree(kb)
    assert _build(tmp_path, kb, "--no-calibrate").exit_code == 0
    assert beside() == []
    assert "build started" in (kb / "run.log").read_text(encoding="utf-8")  # the killed run's log moved in
    res = _build(tmp_path, kb, "--no-calibrate", "--min-support", "1000")  # a build that fails: no tuples
    assert res.exit_code != 0 and beside() == [], (res.output, beside())
    assert os.listdir(tmp_path)  # (the KB of the last good build is still there)
