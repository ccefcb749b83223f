"""`--version`, `-v` / `-vv` logging levels and `culturekb mock-server`."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from culturekb._version import __version__
from culturekb.cli import app, setup_logging
from culturekb.demo import serve_mock_server
from culturekb.errors import ConfigError, DataError

runner = CliRunner()


def test_version_flag_prints_the_package_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"culturekb {__version__}"


@pytest.fixture
def restore_logging():
    root, ours = logging.getLogger(), logging.getLogger("culturekb")
    saved = (root.level, list(root.handlers), ours.level)
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    ours.setLevel(saved[2])


def test_one_v_is_debug_for_culturekb_only_two_for_every_library(restore_logging):
    logging.getLogger().handlers[:] = []  # as in a plain `culturekb` process (pytest's handlers come back after)
    setup_logging(1)
    assert logging.getLogger("culturekb.retrieval").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("httpx").isEnabledFor(logging.DEBUG)
    assert not logging.getLogger("urllib3.connectionpool").isEnabledFor(logging.INFO)
    setup_logging(2)
    assert logging.getLogger("httpx").isEnabledFor(logging.DEBUG)
    assert logging.getLogger("culturekb.kb").isEnabledFor(logging.DEBUG)
    setup_logging(0)
    assert not logging.getLogger("culturekb.kb").isEnabledFor(logging.INFO)
    assert logging.getLogger("culturekb.kb").isEnabledFor(logging.WARNING)
    handlers = [h for h in logging.getLogger().handlers if getattr(h, "_culturekb_cli", False)]
    assert len(handlers) == 1  # one handler however many commands run in a process
    assert handlers[0].level == logging.WARNING  # INFO lines go to run.log files only


def test_a_host_with_its_own_logging_keeps_it(restore_logging):
    root = logging.getLogger()
    mine = logging.NullHandler()
    root.handlers[:] = [mine]
    setup_logging(0)
    assert root.handlers == [mine]  # like logging.basicConfig: nothing added to a configured root


def test_vv_is_accepted_by_the_cli(restore_logging):
    result = runner.invoke(app, ["-vv", "--version"])
    assert result.exit_code == 0


def _serve_in_thread(**kwargs):
    ready: list[str] = []
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(serve_mock_server(port=0, on_ready=ready.append, stop=stop, **kwargs)),
        daemon=True,
    )
    thread.start()
    deadline = time.time() + 10
    while not ready and time.time() < deadline:
        time.sleep(0.01)
    assert ready, "mock server did not start"
    return ready[0], stop, thread, result


def _chat(base_url: str, text: str = "hi") -> httpx.Response:
    return httpx.post(f"{base_url}/chat/completions", timeout=10,
                      json={"model": "m", "messages": [{"role": "user", "content": text}]})


def test_mock_server_answers_from_a_jsonl_script_and_logs_requests(tmp_path: Path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('"first"\n\n{"status": 429, "content": "busy", "headers": {"Retry-After": "2"}}\n"last"\n',
                       encoding="utf-8")
    log = tmp_path / "requests.jsonl"
    base_url, stop, thread, result = _serve_in_thread(answers=answers, log=log, latency_s=0.01)
    try:
        replies = [_chat(base_url, f"q{i}") for i in range(4)]
    finally:
        stop.set()
        thread.join(timeout=10)
    assert [r.status_code for r in replies] == [200, 429, 200, 200]
    assert replies[0].json()["choices"][0]["message"]["content"] == "first"
    assert replies[1].headers["retry-after"] == "2"
    assert [r.json()["choices"][0]["message"]["content"] for r in replies[2:]] == ["last", "last"]
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["body"]["messages"][0]["content"] for e in logged] == ["q0", "q1", "q2", "q3"]
    assert logged[0]["path"] == "/v1/chat/completions" and "content-type" in logged[0]["headers"]
    assert result == [4]


def test_mock_server_default_answer_and_bad_scripts(tmp_path: Path):
    base_url, stop, thread, _ = _serve_in_thread(answer="always this")
    try:
        assert _chat(base_url).json()["choices"][0]["message"]["content"] == "always this"
    finally:
        stop.set()
        thread.join(timeout=10)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"ok"\n{"stauts": 500}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl:2"):
        serve_mock_server(port=0, answers=bad)
    with pytest.raises(DataError, match="does not exist"):
        serve_mock_server(port=0, answers=tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="--latency"):
        serve_mock_server(port=0, latency_s=-1)


def test_mock_server_command_runs_and_stops_on_ctrl_c(tmp_path: Path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # a shell runs background jobs (`make test &`) with SIGINT ignored, children inherit that, and Python then never
    # raises KeyboardInterrupt: the child gets the default disposition back, as a terminal's Ctrl-C would find it
    proc = subprocess.Popen([sys.executable, "-m", "culturekb.cli", "mock-server", "--port", "0", "--answer", "hello"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert "scripted OpenAI-compatible server on http://127.0.0.1:" in line, line + proc.stderr.read()
        base_url = line.split(" on ", 1)[1].split()[0]
        assert _chat(base_url).json()["choices"][0]["message"]["content"] == "hello"
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "served 1 model calls" in rest


def test_mock_server_command_refuses_a_bad_answers_file(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    result = runner.invoke(app, ["mock-server", "--port", "0", "--answers", str(bad)])
    assert result.exit_code == 2
    assert "bad.jsonl:1" in result.output


HEADER = "painting,art_style,emotion,language,utterance\n"
ROWS = "".join(
    f"{p},Impressionism,{e},{lang},the quiet harbor with boats at dusk\n"
    for p in ("artist-a_harbor-boats", "artist-b_harbor-at-night", "artist-c_boats-and-harbor")
    for e, lang in (("contentment", "english"), ("contentment", "english"), ("awe", "chinese"), ("awe", "chinese"))
)


def test_build_leaves_a_run_log_and_progress_summary_lines(tmp_path: Path, restore_logging):
    data = tmp_path / "d.csv"
    data.write_text(HEADER + ROWS, encoding="utf-8")
    out = tmp_path / "kb"
    result = runner.invoke(app, ["build", str(data), "--out", str(out), "--split", "all",
                                 "--cache-dir", str(tmp_path / "c"), "--judges", "lexicon,lexicon"])
    assert result.exit_code == 0, result.output
    log = (out / "run.log").read_text(encoding="utf-8")
    assert "build started: culturekb" in log and "build finished after" in log
    assert "INFO" not in result.output  # INFO goes to run.log, the console shows warnings only
    # the bars stay as a one-line summary when done (leave=False ended them with "\r", blanking the line)
    assert re.search(r"100%[^\r\n]*\n", result.output), result.output
