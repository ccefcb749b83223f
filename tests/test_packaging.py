"""Packaging: the wheel carries the package data and the version; the Dockerfile parses and copies what exists; the
example settings file is valid. The fresh-venv install + smoke test is `make wheel-check` (marker `packaging`)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from culturekb._version import __version__
from culturekb.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
DOCKER_INSTRUCTIONS = {"FROM", "ARG", "ENV", "WORKDIR", "RUN", "COPY", "ADD", "USER", "VOLUME", "EXPOSE",
                       "ENTRYPOINT", "CMD", "LABEL", "HEALTHCHECK", "SHELL", "STOPSIGNAL", "ONBUILD"}


def _docker_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: comments dropped, backslash continuations joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        word, _, args = full.partition(" ")
        out.append((word.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


def test_dockerfile_parses_and_copies_only_what_exists() -> None:
    steps = _docker_instructions((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    assert steps[0][0] in {"FROM", "ARG"} and all(word in DOCKER_INSTRUCTIONS for word, _ in steps), steps
    assert any(word == "FROM" and "python:3.11-slim" in args for word, args in steps)
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    copied = []
    for word, args in steps:
        if word in {"COPY", "ADD"}:
            *sources, _dest = args.split()
            for src in sources:
                assert (ROOT / src).exists(), f"Dockerfile copies {src}, which is not in the repository"
                assert not any(fnmatch.fnmatch(src, pat) for pat in ignored), f"{src} is in .dockerignore"
                copied.append(src)
    assert {"pyproject.toml", "README.md", "culturekb"} <= set(copied)  # what `pip install .` reads
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["readme"] in copied
    extras = next(args for word, args in steps if word == "ARG" and args.startswith("EXTRAS="))
    for extra in extras.split("=", 1)[1].split(","):
        assert extra in pyproject["project"]["optional-dependencies"], extra
    assert ("ENTRYPOINT", '["culturekb"]') in steps
    assert any(word == "USER" and args != "root" for word, args in steps)


def test_example_settings_file_is_valid_and_names_every_setting() -> None:
    example = ROOT / "culturekb.example.toml"
    settings = load_settings(example)
    text = example.read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert name in text, f"culturekb.example.toml does not document {name}"
    assert settings.max_concurrency >= 1
    assert "culturekb.example.toml" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_version_has_one_source() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "culturekb._version.__version__"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                           str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (found,) = out.glob("culturekb-*.whl")
    return found


def test_wheel_carries_the_package_data_and_version(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data_root = ROOT / "culturekb" / "data"
    on_disk = {
        p.relative_to(ROOT).as_posix() for p in data_root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    missing = sorted(on_disk - names)
    assert not missing, f"package data not in the wheel: {missing[:10]}"
    for needed in ("culturekb/py.typed", "culturekb/data/demo/artemis_demo.csv", "culturekb/data/languages.json",
                   "culturekb/testing/openai_server.py", "culturekb/api/_docs.py"):
        assert needed in names, needed
    assert any(n.startswith("culturekb/data/prompts/") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/", "notebooks/")) for n in names)
    assert wheel.name.startswith(f"culturekb-{__version__}-")
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(meta).decode("utf-8")
    assert f"Version: {__version__}" in metadata
    assert "fastapi-offline" in metadata and "nbconvert" in metadata  # offline /docs; notebooks to HTML
    entry_points = zipfile.ZipFile(wheel).read(meta.replace("METADATA", "entry_points.txt")).decode("utf-8")
    assert "culturekb = culturekb.cli:main" in entry_points


@pytest.mark.packaging
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_wheel_installs_in_a_fresh_venv_and_passes_the_smoke_test() -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "wheel_smoke.sh")], capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "wheel smoke test passed" in proc.stdout


def test_python_dash_m_culturekb_is_the_command() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "culturekb", "--version"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("culturekb ")
