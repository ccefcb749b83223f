"""How every command line ends on bad input: a one-paragraph message on stderr and exit status 2 (shared by
`culturekb.cli` and `culturekb.cli_review`)."""

from __future__ import annotations

import errno
import logging
import sqlite3
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from culturekb.errors import CultureKBError

__all__ = ["err", "fail", "guard", "os_error", "sqlite_error", "unreadable_input"]

err = Console(stderr=True, soft_wrap=True)


def fail(exc: CultureKBError) -> NoReturn:
    """Print a CultureKBError as a one-paragraph message on stderr and exit with status 2, or the error's own
    `exit_code` (3 for `RunFailedError`: a run whose calls mostly failed); the message is printed as text: rich
    markup in it, such as a question's ``[blank]``, is escaped, not interpreted."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(getattr(exc, "exit_code", 2)) from None  # 3: a run that failed (RunFailedError)


def unreadable_input(exc: RecursionError | OverflowError | ValueError) -> CultureKBError:
    """The exit-2 error for a RecursionError, OverflowError or ValueError that escaped the loaders (they turn the
    ones they know into DataErrors naming the file and line); it names the innermost frame of our code that
    raised it, which is where the value was read."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "culturekb" in f.filename]
    place = f" (in {Path(frames[-1].filename).name}, line {frames[-1].lineno}, {frames[-1].name})" if frames else ""
    logging.getLogger(__name__).debug("unreadable input", exc_info=exc)
    return CultureKBError(
        f"an input could not be read{place}: {type(exc).__name__}: {str(exc)[:300]}. An input file probably holds "
        "a value this version cannot take (nesting thousands of levels deep, a number with thousands of digits, "
        "an infinite or NaN number); check the files you gave, and run with -v for the full traceback"
    )


_OS_FIXES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the disk is full", "free space on that disk, or give a folder on another disk"),
    errno.EDQUOT: ("the disk quota is used up", "free space within your quota, or give a folder on another disk"),
    errno.EFBIG: ("the file grew past the size this process may write (ulimit -f)",
                  "raise the file-size limit (ulimit -f unlimited), or write less"),
    errno.EROFS: ("the file system is read-only", "give a folder on a writable file system"),
    errno.EACCES: ("permission denied", "make it readable and writable for this user (chmod/chown), or give another "
                   "folder"),
    errno.EPERM: ("operation not permitted", "make it writable for this user (chmod/chown), or give another folder"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "give a path whose parent folders are folders"),
    errno.EEXIST: ("something is in the way: the path, or a folder on it, already exists as a file",
                   "give another path, or move that file away"),
    errno.EISDIR: ("it is a folder where a file was expected", "give a file path, or move the folder away"),
    errno.ENOENT: ("no such file or folder", "check the path (a folder it needs may have been removed)"),
    errno.EADDRINUSE: ("the address is already in use", "stop the other server or choose another --port"),
    errno.EADDRNOTAVAIL: ("the address is not available on this machine", "give another --host"),
    errno.EMFILE: ("too many open files", "raise the open-file limit (ulimit -n)"),
    errno.ENAMETOOLONG: ("the file name is too long", "give a shorter path"),
}


def os_error(exc: OSError) -> CultureKBError:
    """The exit-2 error for an OSError that reached the command line (a read-only or full disk, a path that is a
    file, a port in use ...): what failed, on which path, and how to fix it, in one paragraph."""
    if exc.errno in _OS_FIXES:
        what, fix = _OS_FIXES[exc.errno]
    elif exc.errno is None:  # numpy's tofile and others: "64896 requested and 1468 written", a short write
        what, fix = str(exc) or type(exc).__name__, ("the disk is probably full: free space on it, or give a folder "
                                                     "on another disk")
    else:
        what, fix = exc.strerror or str(exc), "check the path and its permissions, or give another one"
    paths = [str(p) for p in (exc.filename, exc.filename2) if p not in (None, "")]
    if not paths and (found := _path_in_frames(exc)):
        paths = [found]
    where = " -> ".join(paths) if paths else "a file or folder it needed"
    name = errno.errorcode.get(exc.errno) if exc.errno is not None else None
    code = f" ({name})" if name else ""
    logging.getLogger(__name__).debug("OS error", exc_info=exc)
    return CultureKBError(f"cannot use {where}: {what}{code}. {fix[0].upper()}{fix[1:]} "
                          "(run with -v for the traceback)")


def _path_in_frames(exc: BaseException, suffixes: tuple[str, ...] = ()) -> str | None:
    """The file an error without a file name was about, from the innermost frames of its traceback: an open file's
    name, else a local path (ending in one of `suffixes` when given)."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        local = tb.tb_frame.f_locals
        files = [v.name for v in local.values() if isinstance(getattr(v, "name", None), str) and hasattr(v, "write")]
        paths = [str(v) for v in local.values() if isinstance(v, Path | str) and (
            str(v).endswith(suffixes) if suffixes else isinstance(v, Path))]
        if files and not suffixes:
            found = files[-1]
        elif paths:
            found = paths[-1]
        tb = tb.tb_next
    return found


def sqlite_error(exc: sqlite3.Error) -> CultureKBError:
    """The exit-2 error for a SQLite error (a cache or step database on a full or read-only disk)."""
    path = _path_in_frames(exc, (".sqlite", ".sqlite3", ".db"))
    name = getattr(exc, "sqlite_errorname", None)
    logging.getLogger(__name__).debug("SQLite error", exc_info=exc)
    return CultureKBError(
        f"cannot use the cache database {path or '(in the cache folder)'}: {exc}{f' ({name})' if name else ''}. "
        "Free space on that disk and make the cache folder writable, or give another one (--cache-dir, or the "
        "cache_dir setting) (run with -v for the traceback)")


def guard(fn: Any) -> Any:
    """Run `fn`; a CultureKBError becomes a one-paragraph message on stderr and exit status 2, and so does a
    RecursionError, OverflowError or ValueError that a malformed input raised past the loaders, and an OSError (a
    read-only or full disk, a path that is a file: `os_error`)."""
    try:
        return fn()
    except CultureKBError as exc:
        fail(exc)
    except (RecursionError, OverflowError, ValueError) as exc:
        fail(unreadable_input(exc))
    except OSError as exc:
        fail(os_error(exc))
    except sqlite3.Error as exc:
        fail(sqlite_error(exc))
    except KeyboardInterrupt:
        err.print("interrupted; finished steps are cached, run the same command again to resume")
        raise typer.Exit(130) from None
