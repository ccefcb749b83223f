"""Help and output in words (issue 26): no Python type names (``<bool>``, ``<str>``, ``int range``) in any command's
help, whatever typer prints by itself."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from culturekb.cli import app

runner = CliRunner()
COMMANDS = [["build"], ["inspect"], ["kb", "info"], ["kb", "card"], ["index"], ["calibrate"], ["lookup"],
            ["predict"], ["compare"], ["demo"], ["mock-server"], ["serve"], ["review", "export"],
            ["review", "import"], ["review", "apply"], ["review", "status"], ["review", "serve"],
            ["eval", "artemculture"], ["eval", "knowledge"], ["eval", "cedar"], ["eval", "ricevl-vqa"],
            ["eval", "ricevl-grounding"], ["eval", "culturaltom"], ["eval", "commet"], []]
PYTHON_TYPES = re.compile(r"<(bool|str|int|float|path|file|directory|NoneType)>|\b(int|float) range\b|<class ")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "culturekb")
def test_help_names_kinds_in_words(command: list[str]) -> None:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    found = PYTHON_TYPES.search(res.output)
    assert found is None, f"{' '.join(command)} --help shows {found.group(0)!r}:\n{res.output}"


def test_flags_show_no_type_and_values_show_a_word() -> None:
    res = runner.invoke(app, ["build", "--help"], env={"COLUMNS": "200"})
    line = next(x for x in res.output.splitlines() if "--json" in x)
    assert "BOOL" not in line.upper().replace("--JSON", "")
    assert re.search(r"--min-support\s+INTEGER", res.output)
