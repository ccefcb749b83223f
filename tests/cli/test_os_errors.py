"""OS errors through the real CLI (issue 24, item 5): a read-only output, KB or cache folder, a full disk, a bad
port. Each ends in one line on stderr, exit status 2, naming the path and the fix, with nothing half-written.

A read-only folder is simulated with an audit hook (`sys.addaudithook`), not chmod: the tests may run as root, for
whom chmod changes nothing. The hook refuses, as the kernel would with EROFS, every open for writing, mkdir,
rename, remove and SQLite connection under the folders of `read_only(...)`, whatever module does it. A full disk
is a real one as far as the writer can tell: a subprocess with a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored),
so the write that crosses it is cut short by the kernel and the next one fails with EFBIG, as with ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app

pytestmark = pytest.mark.slow  # a KB of the ArtEmis sample (about 20 s on a loaded machine) and subprocesses
runner = CliRunner()
_READ_ONLY: list[Path] = []
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_EVENTS = {"os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.unlink", "os.truncate",
           "shutil.rmtree", "os.chmod"}


def _under(path: Any) -> Path | None:
    if isinstance(path, int) or path is None:
        return None
    try:
        p = Path(os.fsdecode(path)).absolute()
    except (TypeError, ValueError):
        return None
    return next((p for root in _READ_ONLY if p == root or root in p.parents), None)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _READ_ONLY:
        return
    if event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        if writes and _under(path) is not None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
    elif event in _EVENTS or event == "sqlite3.connect":
        for arg in args[:2]:
            if _under(arg) is not None:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(arg))


sys.addaudithook(_hook)  # audit hooks cannot be removed: it does nothing while _READ_ONLY is empty


@contextmanager
def read_only(*folders: Path) -> Iterator[None]:
    _READ_ONLY.extend(f.absolute() for f in folders)
    try:
        yield
    finally:
        del _READ_ONLY[:]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line_exit_2(res: Any, path: Path) -> str:
    text = " ".join(res.output.split())
    assert res.exit_code == 2, f"exit {res.exit_code}: {res.output}\n{res.exception!r}"
    assert "Traceback" not in res.output, res.output
    assert text.startswith("error: cannot use ") and str(path) in text, text
    assert "read-only" in text and "writable" in text, text
    return text


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small indexed KB (the packaged ArtEmis sample, no calibration)."""
    root = tmp_path_factory.mktemp("oserr")
    res = runner.invoke(app, ["build", "sample:artemis", "--out", str(root / "kb"), "--no-calibrate",
                              "--cache-dir", str(root / "cache")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["index", "--kb", str(root / "kb")])
    assert res.exit_code == 0, res.output
    return root / "kb"


def test_build_into_a_read_only_folder(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    with read_only(tmp_path / "ro"):
        res = runner.invoke(app, ["build", "sample:artemis", "--out", str(tmp_path / "ro" / "kb"), "--no-calibrate",
                                  "--cache-dir", str(tmp_path / "cache")])
    _one_line_exit_2(res, tmp_path / "ro")
    assert list((tmp_path / "ro").iterdir()) == []


def test_build_with_a_read_only_cache(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    with read_only(tmp_path / "cache"):
        res = runner.invoke(app, ["build", "sample:artemis", "--out", str(tmp_path / "kb"), "--no-calibrate",
                                  "--cache-dir", str(tmp_path / "cache")])
    _one_line_exit_2(res, tmp_path / "cache")
    assert not (tmp_path / "kb").exists()


@pytest.mark.parametrize("args", [
    ["index", "--kb", "{kb}"],
    ["kb", "card", "{kb}"],
    ["calibrate", "sample:artemis", "--kb", "{kb}"],
])
def test_writes_into_a_read_only_kb(args: list[str], kb: Path, tmp_path: Path) -> None:
    before = _tree(kb)
    with read_only(kb):
        res = runner.invoke(app, [a.format(kb=kb) for a in args])
    _one_line_exit_2(res, kb)
    assert _tree(kb) == before


def test_eval_into_a_read_only_folder(kb: Path, tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    with read_only(tmp_path / "ro"):
        res = runner.invoke(app, ["eval", "knowledge", "sample:artemis", "--kb", str(kb), "--out",
                                  str(tmp_path / "ro" / "run"), "--resamples", "200"])
    _one_line_exit_2(res, tmp_path / "ro")
    assert list((tmp_path / "ro").iterdir()) == []


def test_review_import_into_a_read_only_kb(tmp_path: Path) -> None:
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.store import KnowledgeBase

    t = KnowledgeTuple(concept="sea", culture="en", label="awe", distribution={"awe": 1.0}, support=2,
                       rationales=["vast"], status="pending")
    kb = tmp_path / "kb"
    KnowledgeBase([t], get_scheme("artemis9")).save(kb)
    queue = tmp_path / "queue.jsonl"
    assert runner.invoke(app, ["review", "export", str(kb), "--out", str(queue)]).exit_code == 0
    rows = [json.loads(line) for line in queue.read_text("utf-8").splitlines()]
    queue.write_text("".join(json.dumps({**r, "decision": "approve"}) + "\n" for r in rows), encoding="utf-8")
    before = _tree(tmp_path)
    with read_only(tmp_path):
        res = runner.invoke(app, ["review", "import", str(kb), str(queue)])
    _one_line_exit_2(res, tmp_path)
    assert _tree(tmp_path) == before


def test_serve_refuses_a_port_out_of_range() -> None:
    res = runner.invoke(app, ["serve", "--kb", ".", "--port", "99999"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--port" in res.output and "65535" in res.output


def test_serve_on_a_port_in_use_is_refused_before_loading(tmp_path: Path) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        res = runner.invoke(app, ["serve", "--kb", str(tmp_path / "no-kb"), "--port", str(port)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in text and "another --port" in text


_FULL_DISK = textwrap.dedent("""
    import errno, os, resource, signal, sys
    from culturekb.cli import app
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # the kernel then answers EFBIG instead of killing us
    limit, full_at = int(sys.argv[1]), sys.argv[2]
    if limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT
    def full(event, args):   # the disk fills up when a file named `full_at` is opened for writing
        if event != "open" or not full_at or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        if (isinstance(args[1], str) and any(c in args[1] for c in "wax+")) or (args[2] or 0) & writes:
            if os.path.basename(os.fsdecode(args[0])).startswith(full_at):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fsdecode(args[0]))
    sys.addaudithook(full)
    sys.argv = ["culturekb", *sys.argv[3:]]
    app()
""")


def _full_disk(limit: int, args: list[str], full_at: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess whose writes past `limit` bytes in any file fail (0: no limit), and where opening a
    file whose name starts with `full_at` for writing fails with ENOSPC (fault injection at the write layer)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", _FULL_DISK, str(limit), full_at, *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a run that failed with exit 2: no traceback, no second line for the same error
    (the run's ERROR record goes to its run.log only), no ``--- Logging error ---``."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "\r" not in ln]  # progress bars aside
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "Logging error" not in proc.stderr, proc.stderr[-3000:]
    errors = [ln for ln in lines if ln.startswith(("error:", "ERROR"))]
    assert len(errors) == 1 and errors[0].startswith("error: cannot use "), lines
    return errors[0]


def test_eval_on_a_full_disk_leaves_whole_prediction_lines(kb: Path, tmp_path: Path) -> None:
    """The predictions file crosses the limit mid-chunk: exit 2, one line, and every line left is whole JSON."""
    run = tmp_path / "run"
    proc = _full_disk(30_000, ["eval", "knowledge", "sample:artemis", "--kb", str(kb), "--out", str(run),
                             "--resamples", "200"])
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "error: cannot use " in proc.stderr, proc.stderr[-3000:]
    assert "EFBIG" in proc.stderr and "ulimit -f" in proc.stderr
    files = {p.name: p.stat().st_size for p in run.iterdir()} if run.is_dir() else {}
    text = (run / "predictions.jsonl").read_text("utf-8") if "predictions.jsonl" in files else ""
    # some chunks were written whole before the one the limit cut (failed twice in full runs on 2026-12-04 and
    # passed in 8 runs after, alone and under load: the message says which file hit the limit first)
    assert text.endswith("\n"), (files, proc.stderr[-2000:])
    for line in text.splitlines():
        json.loads(line)


def test_build_on_a_full_disk(tmp_path: Path) -> None:
    proc = _full_disk(20_000, ["build", "sample:artemis", "--out", str(tmp_path / "kb"), "--no-calibrate",
                               "--cache-dir", str(tmp_path / "cache")])
    _one_error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # no KB, no .kb.lock, no .kb.run.log


@pytest.mark.parametrize("step", ["index", "calibration"])
def test_a_build_that_fails_after_its_tuples_leaves_no_half_kb(step: str, kb: Path, tmp_path: Path) -> None:
    """The disk fills up once the tuples are written, while the build indexes or calibrates its KB (issue 24: the
    build exited 2 but left a loadable KB with an empty index/ and no calibration). The KB is written, indexed and
    calibrated beside --out and replaces it only when all three succeeded: the previous KB at --out stays as it
    was, and a new --out is not created. Index: the write layer answers ENOSPC when vectors.npy is opened; the
    calibration: a real file-size limit between the tuples file (written) and calibration.json (the largest)."""
    shutil.copytree(kb.parent / "cache", tmp_path / "cache")  # a warm cache: the build steps compute nothing
    previous = tmp_path / "previous"
    shutil.copytree(kb, previous)
    before = _tree(previous)
    if step == "index":
        limit, full_at = 0, "vectors.npy"
    else:
        limit, full_at = (kb / "tuples.jsonl").stat().st_size + 16_384, ""
    for out in (previous, tmp_path / "new"):
        proc = _full_disk(limit, ["build", "sample:artemis", "--out", str(out), "--cache-dir",
                                  str(tmp_path / "cache")], full_at)
        line = _one_error_line(proc)
        assert ("vectors.npy" in line and "ENOSPC" in line) if step == "index" else (
            "calibration.json" in line and "EFBIG" in line), line  # the step the test means to hit
        assert str(tmp_path) in line
    assert _tree(previous) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "previous"]  # nothing half-written beside
