"""`run_log(folder)`: a ``run.log`` in every run folder (an eval's output folder, a built KB).

While the block runs, the records of culturekb's loggers (INFO and up, DEBUG with ``-v``; the CLI keeps its
console at WARNING) go to the log too, between a header line (what ran, the version, the process) and a footer
line (how it ended, how long it took). An eval folder gets its log appended to at once (a resumed run adds to
it). A folder that is written atomically at the end (a KB: `culturekb._io.atomic_dir` replaces the whole
folder) cannot hold a file while it is made, so the log is written beside it and moved in when it exists;
after a failed build it stays beside the folder as ``.<name>.run.log`` for inspection.
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

__all__ = ["RUN_LOG", "run_log"]

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
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
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
        log.error("%s failed: %s: %s", what, type(exc).__name__, exc)
        raise
    finally:
        log.info("%s %s after %.1f s", what, outcome, time.perf_counter() - started)
        ours.removeHandler(handler)
        ours.setLevel(saved_level)
        handler.close()
        if atomic:
            if outcome == "finished" and folder.is_dir():
                _move_in(path, folder / RUN_LOG)
            else:  # a failed build leaves nothing behind (its errors went to the console)
                with contextlib.suppress(OSError):
                    path.unlink()


def _move_in(src: Path, dst: Path) -> None:
    """Append `src` to `dst` (a rebuild in place keeps no earlier log: the folder is new) and remove it."""
    with contextlib.suppress(OSError):
        with src.open("rb") as fh, dst.open("ab") as out:
            out.write(fh.read())
        src.unlink()
