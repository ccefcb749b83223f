"""The layer rules of docs/architecture.md, checked on the package's real import graph.

Every `import` and `from ... import` in every module counts, including the ones inside functions (lazy
imports are still dependencies). A failure names the importing file, the line and the rule it breaks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "culturekb"

# Layer of each top-level part of the package (module or subpackage under culturekb/).
LAYER = {
    "errors": "ground", "_version": "ground", "_io": "ground", "_images": "ground", "config": "ground",
    "registry": "ground", "_runlog": "ground",
    "kb": "ground", "text": "text", "models": "models", "builders": "builders", "retrieval": "retrieval",
    "inference": "inference", "evals": "evals", "workflows": "jobs", "demo": "jobs", "api": "faces", "cli": "faces",
    "testing": "testing", "data": "ground",
}

# What each layer may import (besides itself). Anything else is a broken rule.
ALLOWED = {
    "ground": {"ground"},
    "text": {"ground"},
    "models": {"ground"},
    "builders": {"ground", "text", "models"},
    "retrieval": {"ground", "text", "models"},
    "inference": {"ground", "text", "models", "retrieval"},
    "evals": {"ground", "text", "models", "retrieval", "inference"},
    # the demo job (culturekb/demo.py, and only it: see test_only_the_demo_starts_the_test_server) starts the
    # bundled scripted server in-process to show what a VLM receives
    "jobs": {"ground", "text", "models", "retrieval", "inference", "evals", "builders", "testing"},
    "faces": {"ground", "text", "models", "retrieval", "inference", "jobs"},
    "testing": {"ground", "models"},
}


def _part_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "culturekb" or len(parts) < 2:
        return None
    return parts[1]


def _module_name(path: Path) -> str:
    top = next(p for p in path.parents if p.name == "culturekb").parent
    rel = path.relative_to(top).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement, resolving relative imports."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "culturekb":  # `from culturekb import x` names a part, or a root attribute (__version__)
                out.extend((node.lineno, f"culturekb.{a.name}") for a in node.names if a.name in LAYER)
            else:
                out.append((node.lineno, mod))
    return out


def _violations() -> list[str]:
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        src_part = _part_of(_module_name(path))
        if src_part is None:  # the lazy root culturekb/__init__.py re-exports everything by name
            continue
        src_layer = LAYER.get(src_part)
        if src_layer is None:
            broken.append(f"{path.relative_to(PACKAGE.parent)}: part {src_part!r} has no layer in LAYER")
            continue
        for line, mod in _imports(path):
            dst_part = _part_of(mod)
            if dst_part is None or dst_part == src_part:
                continue
            dst_layer = LAYER.get(dst_part, "?")
            if dst_layer != src_layer and dst_layer not in ALLOWED[src_layer]:
                broken.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {mod} ({src_layer} -> {dst_layer})")
    return broken


def test_layer_rules_hold() -> None:
    broken = _violations()
    assert not broken, "import rules broken:\n" + "\n".join(broken)


@pytest.mark.parametrize("src", ["retrieval", "inference", "evals", "api"])
def test_no_layer_below_jobs_imports_builders(src: str) -> None:
    hits = [
        f"{p.relative_to(PACKAGE.parent)}:{line}"
        for p in sorted((PACKAGE / src).rglob("*.py"))
        for line, mod in _imports(p)
        if mod.startswith("culturekb.builders")
    ]
    assert hits == []


def test_only_the_demo_starts_the_test_server() -> None:
    hits = [
        f"{p.relative_to(PACKAGE.parent)}:{line}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != PACKAGE / "demo.py" and _part_of(_module_name(p)) != "testing"
        for line, mod in _imports(p)
        if mod.startswith("culturekb.testing")
    ]
    assert hits == []


def test_checker_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    # the check must catch an import hidden inside a function, or it could never fail
    f = PACKAGE / "retrieval" / "_arch_probe_tmp.py"
    f.write_text("def f():\n    from culturekb.builders import build_kb\n    return build_kb\n", "utf-8")
    try:
        assert any("_arch_probe_tmp.py:2 imports culturekb.builders" in v for v in _violations())
    finally:
        f.unlink()


def package_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """Which part imports which, with the number of import statements behind each arrow."""
    graph: dict[str, dict[str, int]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        src = rel.parts[1] if len(rel.parts) > 1 else None
        if src is None or src == "__init__":
            continue
        for _, mod in _imports(path):
            dst = _part_of(mod)
            if dst is not None and dst != src:
                row = graph.setdefault(src, {})
                row[dst] = row.get(dst, 0) + 1
    return graph


if __name__ == "__main__":  # print the import graph: python tests/test_architecture.py [PACKAGE_DIR]
    import sys

    target = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE
    for src, row in sorted(package_graph(target).items()):
        sys.stdout.write(f"{src:>10} -> {', '.join(f'{d} ({n})' for d, n in sorted(row.items()))}\n")
