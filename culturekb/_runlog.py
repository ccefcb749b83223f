"""`run_log(folder)`: a ``run.log`` in every run folder (an eval's output folder, a built KB).

While the block runs, the records of culturekb's loggers (INFO and up, DEBUG with ``-v``; the CLI keeps its
console at WARNING) go to the log too, between a header line (what ran, the version, the process) and a footer
line (how it ended, how long it took). An eval folder gets its log appended to at once (a resumed run adds to
it). A folder that is written atomically at the end (a KB: `culturekb._io.atomic_dir` replaces the whole
folder) cannot hold a file while it is made, so the log is written beside it (``.<name>.run.log``) and moved in
when the build finishes; a failed build removes it (its error went to the console), a killed one cannot, and the
next build of that folder takes it over.

The log never breaks the run it records: a log that cannot be written (a full or read-only disk) prints no
traceback per record (as `logging` does by default) and does not replace the run's own error; the run's failure
is recorded in the log only (the command line prints it once, as ``error: ...``), and a run that finishes with an
unwritable log says so in one warning.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from culturekb._version import __version__

__all__ = ["RUN_LOG", "log_failure", "run_log"]

RUN_LOG = "run.log"
"""The name of the log file in a run folder."""

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@contextlib.contextmanager
def run_log(folder: str | Path, what: str, *, atomic: bool = False) -> Iterator[Path]:
    """Log the block's culturekb records to ``folder/run.log``; yields the file being written.

    `what` names the run in the header (``"eval cedar"``, ``"build"``). `atomic`: the folder is replaced as a
    whole when the block ends (a KB build), so the log is written beside it and moved in afterwards.
    """
    folder = Path(folder)
    if atomic:
        path = folder.parent / f".{folder.name}.{RUN_LOG}"
    else:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RUN_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _RunLogHandler(path)
    handler.setFormatter(logging.Formatter(_FORMAT))
    ours = logging.getLogger("culturekb")
    saved_level = ours.level
    if not ours.isEnabledFor(logging.INFO):
        # the log gets INFO even when the console shows warnings only; library users' own handlers (no CLI)
        # would see INFO too while the run lasts, so the level is raised only for the block
        ours.setLevel(logging.INFO)
    ours.addHandler(handler)
    log = logging.getLogger("culturekb.run")
    started = time.perf_counter()
    log.info("%s started: culturekb %s, python %s, pid %d, argv %s", what, __version__,
             sys.version.split()[0], os.getpid(), " ".join(sys.argv))
    outcome = "failed"
    try:
        yield path
        outcome = "finished"
    except BaseException as exc:
        # to the log only: the command line prints the error itself, once (`culturekb._cli_errors.fail`)
        handler.handle(_failure_record(what, exc))
        raise
    finally:
        log.info("%s %s after %.1f s", what, outcome, time.perf_counter() - started)
        ours.removeHandler(handler)
        ours.setLevel(saved_level)
        handler.close()  # never raises: a flush that fails is kept in `handler.failure`
        if atomic:
            if outcome == "finished" and folder.is_dir() and handler.failure is None:
                _move_in(path, folder / RUN_LOG)
            else:  # a failed build leaves nothing behind (its errors went to the console)
                with contextlib.suppress(OSError):
                    path.unlink()
        if outcome == "finished" and handler.failure is not None:
            log.warning("%s finished, but its log %s could not be written (%s); the run's results are not "
                        "affected", what, path, handler.failure)


def log_failure(folder: str | Path, what: str, exc: BaseException) -> None:
    """Append an ERROR line for a run found failed after its block ended (an eval whose calls mostly failed, exit 3)
    to ``folder/run.log``, as `run_log` records a run that raised; a log that cannot be written is left as it is."""
    with contextlib.suppress(OSError):
        with (Path(folder) / RUN_LOG).open("a", encoding="utf-8") as fh:
            fh.write(logging.Formatter(_FORMAT).format(_failure_record(what, exc)) + "\n")


def _failure_record(what: str, exc: BaseException) -> logging.LogRecord:
    """The ERROR line of a failed run, as `run_log` and `log_failure` write it."""
    return logging.LogRecord("culturekb.run", logging.ERROR, __file__, 0, "%s failed: %s: %s",
                             (what, type(exc).__name__, exc), None)


class _RunLogHandler(logging.FileHandler):
    """A `logging.FileHandler` that a failing disk cannot turn into noise: the first error writing the log is kept
    in `failure` and later records are dropped (no ``--- Logging error ---`` traceback per record), and `close`
    never raises (so the run's own error, not the log's, is the one reported)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, mode="a", encoding="utf-8")
        self.failure: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.failure is None:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        self.failure = self.failure or sys.exc_info()[1]

    def close(self) -> None:
        try:
            super().close()
        except OSError as exc:  # the last flush: the disk filled up after the last record was written
            self.failure = self.failure or exc
            with contextlib.suppress(OSError):
                if self.stream is not None:
                    self.stream.close()
            self.stream = None  # type: ignore[assignment]


def _move_in(src: Path, dst: Path) -> None:
    """Append `src` to `dst` (a rebuild in place keeps no earlier log: the folder is new) and remove it."""
    with contextlib.suppress(OSError):
        with src.open("rb") as fh, dst.open("ab") as out:
            out.write(fh.read())
        src.unlink()
