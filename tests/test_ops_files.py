"""File modes (0644/0755 under the umask, private mode on request), the XDG cache folder, run.log files and the
hidden model-loading bars."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from culturekb._io import PRIVATE_FILES_ENV, atomic_dir, atomic_write_json, atomic_write_text, dir_mode, file_mode
from culturekb._runlog import RUN_LOG, run_log
from culturekb.config import default_cache_dir, load_settings


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[object]:
    """`umask(value)` sets the process umask for the test; the old one is restored."""
    old = os.umask(0o022)
    os.umask(old)

    def set_(value: int) -> None:
        os.umask(value)

    yield set_
    os.umask(old)


def test_atomic_files_and_folders_follow_the_umask(tmp_path: Path, umask, monkeypatch) -> None:
    monkeypatch.delenv(PRIVATE_FILES_ENV, raising=False)
    umask(0o022)
    atomic_write_text(tmp_path / "a.txt", "x")
    atomic_write_json(tmp_path / "b.json", {"k": 1})
    with atomic_dir(tmp_path / "kb") as tmp:
        (tmp / "manifest.json").write_text("{}", encoding="utf-8")
    assert (_mode(tmp_path / "a.txt"), _mode(tmp_path / "b.json")) == (0o644, 0o644)
    assert _mode(tmp_path / "kb") == 0o755
    assert (file_mode(), dir_mode()) == (0o644, 0o755)
    umask(0o002)  # a group-writable umask is honoured too
    atomic_write_text(tmp_path / "c.txt", "x")
    assert _mode(tmp_path / "c.txt") == 0o664
    umask(0o077)  # the user's own private umask
    atomic_write_text(tmp_path / "d.txt", "x")
    assert _mode(tmp_path / "d.txt") == 0o600


def test_private_mode_writes_0600_and_0700(tmp_path: Path, umask, monkeypatch) -> None:
    umask(0o022)
    monkeypatch.setenv(PRIVATE_FILES_ENV, "1")
    atomic_write_text(tmp_path / "secret.txt", "x")
    with atomic_dir(tmp_path / "kb") as tmp:
        (tmp / "f").write_text("", encoding="utf-8")
    assert _mode(tmp_path / "secret.txt") == 0o600 and _mode(tmp_path / "kb") == 0o700


def test_cache_dir_defaults_to_xdg_then_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "culturekb"
    assert load_settings().cache_dir == tmp_path / "xdg" / "culturekb"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")  # the XDG spec: relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "culturekb"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "culturekb"
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "env"))
    assert load_settings().cache_dir == tmp_path / "env"
    assert load_settings(cache_dir=tmp_path / "flag").cache_dir == tmp_path / "flag"


def test_an_existing_legacy_cache_folder_is_still_used_and_said(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / ".culturekb-cache").mkdir()
    with caplog.at_level(logging.INFO, logger="culturekb.config"):
        assert default_cache_dir() == Path(".culturekb-cache")
        default_cache_dir()
    said = [r.getMessage() for r in caplog.records if "existing cache folder" in r.getMessage()]
    assert len(said) == 1 and "CULTUREKB_CACHE_DIR" in said[0]  # once, not once per Settings object


def test_run_log_records_the_run_and_culturekb_records(tmp_path: Path) -> None:
    log = logging.getLogger("culturekb.evals.some_runner")
    with run_log(tmp_path / "run", "eval demo") as path:
        log.info("predicting %d samples", 3)
        logging.getLogger("httpx").warning("not ours")
    text = path.read_text(encoding="utf-8")
    assert path == tmp_path / "run" / RUN_LOG
    assert "eval demo started: culturekb" in text and "predicting 3 samples" in text
    assert "eval demo finished after" in text and "not ours" not in text
    with pytest.raises(RuntimeError), run_log(tmp_path / "run", "eval demo"):
        raise RuntimeError("boom")
    text = path.read_text(encoding="utf-8")
    assert text.count("started") == 2 and "eval demo failed: RuntimeError: boom" in text  # a resumed run appends
    assert logging.getLogger("culturekb").level == logging.NOTSET and not logging.getLogger("culturekb").handlers


def test_run_log_of_an_atomic_folder_moves_in_or_leaves_nothing(tmp_path: Path) -> None:
    with run_log(tmp_path / "kb", "build", atomic=True):
        with atomic_dir(tmp_path / "kb") as tmp:
            (tmp / "manifest.json").write_text("{}", encoding="utf-8")
    assert "build finished" in (tmp_path / "kb" / RUN_LOG).read_text(encoding="utf-8")
    with pytest.raises(ValueError), run_log(tmp_path / "kb2", "build", atomic=True):
        raise ValueError("bad input")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]


def test_a_failed_run_is_recorded_in_its_log_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The command line prints the error once (``error: ...``); the run's ERROR record goes to run.log, not to the
    console's handlers (issue 24: a failed build printed two lines)."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RuntimeError), run_log(tmp_path / "run", "eval demo") as path:
        raise RuntimeError("boom")
    assert "eval demo failed: RuntimeError: boom" in path.read_text(encoding="utf-8")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


_FULL = Path("/dev/full")  # every write to it fails with ENOSPC, as on a full disk


@pytest.mark.skipif(not _FULL.exists(), reason="needs /dev/full")
@pytest.mark.parametrize("atomic", [False, True])
def test_a_log_on_a_full_disk_does_not_hide_the_runs_error(tmp_path: Path, atomic: bool,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A run log that cannot be written prints no ``--- Logging error ---`` traceback per record, and the run's own
    error (not the log's ENOSPC) is the one raised; a build's temporary log beside the folder is removed."""
    folder = tmp_path / "kb"
    log_path = tmp_path / f".kb.{RUN_LOG}" if atomic else folder / RUN_LOG
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.symlink_to(_FULL)
    with pytest.raises(ValueError, match="the real error"), run_log(folder, "build", atomic=atomic):
        for n in range(50):
            logging.getLogger("culturekb.builders").info("step %d", n)
        raise ValueError("the real error")
    assert "Logging error" not in capsys.readouterr().err
    assert log_path.is_symlink() != atomic  # the temporary log of an atomic folder is always removed
    assert logging.getLogger("culturekb").level == logging.NOTSET and not logging.getLogger("culturekb").handlers


@pytest.mark.skipif(not _FULL.exists(), reason="needs /dev/full")
def test_a_run_that_finishes_with_an_unwritable_log_says_so_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / RUN_LOG).symlink_to(_FULL)
    with run_log(tmp_path / "run", "eval demo"):
        logging.getLogger("culturekb.evals").warning("a warning the console shows")
    said = [r.getMessage() for r in caplog.records if "could not be written" in r.getMessage()]
    assert len(said) == 1 and str(tmp_path / "run" / RUN_LOG) in said[0] and "No space left" in said[0], said
    assert "Logging error" not in capsys.readouterr().err


def test_model_loading_bars_are_hidden_while_loading_and_restored() -> None:
    tf_logging = pytest.importorskip("transformers.utils.logging")
    from culturekb.models.embedders import _no_load_bars

    tf_logging.enable_progress_bar()
    with _no_load_bars():
        assert not tf_logging.is_progress_bar_enabled()
    assert tf_logging.is_progress_bar_enabled()
