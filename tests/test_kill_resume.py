"""A real `culturekb build` process killed at six points (SIGKILL-like: `os._exit(137)` at named checkpoints, see
`culturekb.kb._checkpoints`) and resumed each time over the same cache resumes to a KB that is byte for byte the
KB of an uninterrupted build; the save that was killed leaves a temporary directory that the next run removes.

The kills are chained (each resumed run is killed at a later point, the last run finishes), so every resume starts
from a different partial state: concepts half done, embeddings half committed (so later batches differ from an
uninterrupted build's), rationales, either judge, and the save itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from culturekb.kb.store import remove_stale_temp_dirs

DEMO = Path(__file__).resolve().parents[1] / "culturekb" / "data" / "demo" / "artemis_demo.csv"
KILLS = ["concepts@2", "vectors@10", "rationales@1", "judge1@2", "judge2@1", "save@1"]


def _build(out: Path, cache: Path, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("CULTUREKB_TEST_KILL_AT", None)
    if kill_at:
        env["CULTUREKB_TEST_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, "-m", "culturekb.cli", "build", str(DEMO), "--out", str(out), "--cache-dir", str(cache),
         "--json"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def _kb_files(kb: Path) -> dict[str, bytes]:
    """The KB's content files, its index (written by the build's calibration step) included but for its
    index.json, which records when it was made; the per-run ones (build report, run log) left out."""
    return {str(p.relative_to(kb)): p.read_bytes() for p in sorted(kb.rglob("*"))
            if p.is_file() and not p.name.startswith(("build_report", "run.log")) and p.name != "index.json"}


@pytest.mark.slow
def test_build_killed_at_six_points_resumes_to_identical_bytes(tmp_path: Path) -> None:
    base = _build(tmp_path / "base", tmp_path / "cache-base")
    assert base.returncode == 0, base.stderr[-2000:]

    out, cache = tmp_path / "kb", tmp_path / "cache"
    for point in KILLS:
        killed = _build(out, cache, point)
        assert killed.returncode == 137, f"{point}: exit {killed.returncode}, the checkpoint was not reached\n" \
                                         f"{killed.stderr[-1500:]}"
        assert f"killed at {point}" in killed.stderr
    leftovers = [p.name for p in tmp_path.glob(".kb.*.tmp")]
    assert leftovers, "the killed save should have left its temporary directory"
    assert not out.exists()
    # a process killed with SIGKILL cannot tidy up: its lock file and its log stay beside the KB folder
    assert (tmp_path / ".kb.lock").exists() and (tmp_path / ".kb.run.log").exists()

    final = _build(out, cache)
    assert final.returncode == 0, final.stderr[-2000:]
    assert not list(tmp_path.glob(".kb.*.tmp")), "the stale temporary directory was not removed"
    # the resumed build takes them over: the lock file removed, the killed runs' log moved into the KB's run.log
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".kb")) == []
    assert (out / "run.log").read_text(encoding="utf-8").count("build started") == len(KILLS) + 1
    assert _kb_files(out) == _kb_files(tmp_path / "base")


def test_stale_temp_dirs_only_ours_and_only_dead(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    dead = tmp_path / ".kb.dead1234.tmp"
    dead.mkdir()
    (dead / "tuples.jsonl").write_text("{}\n")
    (dead / ".writer").write_text(f"999999999 {os.uname().nodename}")
    live = tmp_path / ".kb.live5678.tmp"
    live.mkdir()
    (live / ".writer").write_text(f"{os.getppid()} {os.uname().nodename}")  # a live process
    foreign = tmp_path / ".kb.notours.tmp"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("keep me")
    other = tmp_path / ".other.abc.tmp"
    other.mkdir()
    (other / ".writer").write_text(f"999999999 {os.uname().nodename}")

    removed = remove_stale_temp_dirs(kb)

    assert removed == [dead]
    assert not dead.exists() and live.exists() and foreign.exists() and other.exists()


def test_killed_between_renames_restores_the_old_kb(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    old = tmp_path / ".kb.old-999999999"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    remove_stale_temp_dirs(kb)
    assert (kb / "manifest.json").is_file() and not old.exists()
