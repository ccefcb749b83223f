"""Fixtures of the CLI tests: one `culturekb demo` run per session (tests/cli/test_demo.py checks its page, and
tests/cli/test_doc_examples.py runs the docs' examples that name `demo-output/kb` against its KB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb.cultures import reset_default_registry


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """(output folder, printed page) of one `culturekb demo` run, in a process that knows only the packaged
    cultures (the demo's cultures file and then its KB bring de and ru; the registry is reset after the run, and
    the KB's manifest brings them back to whoever loads it)."""
    reset_default_registry()
    out = tmp_path_factory.mktemp("demo") / "demo-output"
    result = CliRunner().invoke(app, ["demo", "--out", str(out)])
    reset_default_registry()
    assert result.exit_code == 0, result.output
    yield out, result.stdout  # the page; progress bars go to stderr
    reset_default_registry()
