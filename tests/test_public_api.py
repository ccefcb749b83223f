"""The root package: every public name resolves lazily, is typed for checkers, and `import culturekb` is light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import culturekb

ROOT = Path(culturekb.__file__)


def _type_checking_names() -> dict[str, str]:
    """name -> module of every import under `if TYPE_CHECKING:` in culturekb/__init__.py."""
    tree = ast.parse(ROOT.read_text("utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                out.update({a.name: imp.module for a in imp.names})
    return out


def test_every_lazy_name_has_a_typed_import() -> None:
    lazy = dict(culturekb._LAZY)
    typed = _type_checking_names()
    assert set(typed) == set(lazy)
    # the type checker sees the object where it is defined or re-exported: it must be the same object at run time
    for name, module in typed.items():
        import importlib

        assert getattr(importlib.import_module(module), name) is getattr(culturekb, name), name


@pytest.mark.parametrize("name", sorted(culturekb._LAZY))
def test_public_name_resolves_and_is_documented(name: str) -> None:
    obj = getattr(culturekb, name)
    assert (obj.__doc__ or "").strip(), f"culturekb.{name} has no docstring"


def test_unknown_name_is_a_clear_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'open_everything'"):
        culturekb.open_everything  # noqa: B018


def test_import_is_light() -> None:
    code = ("import sys, culturekb; heavy = [m for m in ('torch', 'faiss', 'sentence_transformers', 'fastapi') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_all_lists_every_lazy_name() -> None:
    assert culturekb.__all__ == ["__version__", *culturekb._LAZY]
