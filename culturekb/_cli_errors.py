"""How every command line ends on bad input: a one-paragraph message on stderr and exit status 2 (shared by
`culturekb.cli` and `culturekb.cli_review`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from culturekb.errors import CultureKBError

__all__ = ["err", "fail", "guard", "unreadable_input"]

err = Console(stderr=True, soft_wrap=True)


def fail(exc: CultureKBError) -> NoReturn:
    """Print a CultureKBError as a one-paragraph message on stderr and exit with status 2 (the message is printed
    as text: rich markup in it, such as a question's ``[blank]``, is escaped, not interpreted)."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(2) from None


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


def guard(fn: Any) -> Any:
    """Run `fn`; a CultureKBError becomes a one-paragraph message on stderr and exit status 2, and so does a
    RecursionError, OverflowError or ValueError that a malformed input raised past the loaders."""
    try:
        return fn()
    except CultureKBError as exc:
        fail(exc)
    except (RecursionError, OverflowError, ValueError) as exc:
        fail(unreadable_input(exc))
    except KeyboardInterrupt:
        err.print("interrupted; finished steps are cached, run the same command again to resume")
        raise typer.Exit(130) from None
