"""The layer rules of docs/architecture.md, checked on the package's real import graph.

Every `import` and `from ... import` in every module counts, including the ones inside functions (lazy
imports are still dependencies), and so does every ``"culturekb.module:attr"`` string (a lazy target such as a
registry entry or a runner's job is imported when it is used, so it is a dependency too). A failure names the
importing file, the line and the rule it breaks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "culturekb"

# Layer of each top-level part of the package (module or subpackage under culturekb/).
LAYER = {
    "errors": "ground", "_version": "ground", "_io": "ground", "_images": "ground", "config": "ground",
    "registry": "ground", "_runlog": "ground",
    "kb": "ground", "text": "text", "models": "models", "builders": "builders", "retrieval": "retrieval",
    "inference": "inference", "evals": "evals", "workflows": "jobs", "demo": "jobs", "api": "faces", "cli": "faces",
    "cli_review": "faces", "cli_kb": "faces", "_cli_errors": "faces", "_cli_help": "faces", "__main__": "faces",
    "testing": "testing", "data": "ground", "_discovery": "ground", "_records": "ground",
    "_tables": "ground",
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


# A string literal that names a lazy import target, "culturekb.module:attr" (RunnerCommand("culturekb.x:y"), a
# registry entry, an entry-point value): the target is imported when the string is used, so it obeys the same rules.
STRING_TARGET = re.compile(r"^culturekb(\.\w+)+:\w")

# The seams, the only modules whose string targets may point up: the registry's built-in entries, and what
# benchmark discovery registers, name the modules above them lazily so that nothing below imports them.
STRING_TARGET_SEAMS = frozenset({"culturekb.registry", "culturekb._discovery"})


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
    return _imports_in(path.read_text("utf-8"), _module_name(path), path.name == "__init__.py", str(path))


def _imports_in(source: str, module: str, is_package: bool, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, imported module) for every import statement of `source`, the text of `module`."""
    tree = ast.parse(source, filename=filename)
    here = module.split(".")
    package = here if is_package else here[:-1]
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


def _string_targets(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, module) for every string literal of `source` that names a ``"culturekb.module:attr"`` target."""
    return [
        (node.lineno, node.value.split(":", 1)[0])
        for node in ast.walk(ast.parse(source, filename=filename))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and STRING_TARGET.match(node.value)
    ]


def _module_violations(where: str, module: str, source: str, is_package: bool = False) -> list[str]:
    """The broken rules of one module's text: its imports, and its string targets unless it is a seam."""
    src_part = _part_of(module)
    if src_part is None:  # the lazy root culturekb/__init__.py re-exports everything by name
        return []
    src_layer = LAYER.get(src_part)
    if src_layer is None:
        return [f"{where}: part {src_part!r} has no layer in LAYER"]
    edges = [(line, "imports", mod) for line, mod in _imports_in(source, module, is_package, where)]
    if module not in STRING_TARGET_SEAMS:
        edges += [(line, "names the string target", mod) for line, mod in _string_targets(source, where)]
    broken = []
    for line, verb, mod in sorted(edges):
        dst_part = _part_of(mod)
        if dst_part is None or dst_part == src_part:
            continue
        dst_layer = LAYER.get(dst_part, "?")
        if dst_layer != src_layer and dst_layer not in ALLOWED[src_layer]:
            broken.append(f"{where}:{line} {verb} {mod} ({src_layer} -> {dst_layer})")
    return broken


def _violations() -> list[str]:
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        broken += _module_violations(str(path.relative_to(PACKAGE.parent)), _module_name(path),
                                     path.read_text("utf-8"), path.name == "__init__.py")
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


def test_checker_sees_a_string_target_pointing_up() -> None:
    # a lazy "module:attr" string is a dependency: a module naming a job or a builder from below breaks the rules
    # as an import would, even inside a function; the same strings in a seam (the registry) do not
    source = (
        'COMMAND = RunnerCommand("culturekb.workflows:eval_x")\n'
        'def f():\n'
        '    return "culturekb.builders.pipeline:build_kb"\n'
        'SAME_LAYER = "culturekb.evals.metrics:accuracy"\n'
        'NOT_A_TARGET = "see culturekb.workflows:eval_x"\n'
    )
    assert _module_violations("culturekb/evals/fake.py", "culturekb.evals.fake", source) == [
        "culturekb/evals/fake.py:1 names the string target culturekb.workflows (evals -> jobs)",
        "culturekb/evals/fake.py:3 names the string target culturekb.builders.pipeline (evals -> builders)",
    ]
    assert _module_violations("culturekb/retrieval/fake.py", "culturekb.retrieval.fake", source) == [
        "culturekb/retrieval/fake.py:1 names the string target culturekb.workflows (retrieval -> jobs)",
        "culturekb/retrieval/fake.py:3 names the string target culturekb.builders.pipeline (retrieval -> builders)",
        "culturekb/retrieval/fake.py:4 names the string target culturekb.evals.metrics (retrieval -> evals)",
    ]
    for seam in sorted(STRING_TARGET_SEAMS):
        assert _module_violations(f"{seam}.py", seam, source) == []


def test_the_string_target_seams_exist() -> None:
    # an exception for a module that is gone would hide nothing, but would make the rule look looser than it is
    for seam in STRING_TARGET_SEAMS:
        assert (PACKAGE.parent / (seam.replace(".", "/") + ".py")).is_file(), seam


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


def test_evals_and_inference_never_use_the_process_culture_registry() -> None:
    # issue 20 item 4: a culture's language and name come from the KB's registry (or the run's), passed in
    files = [p for part in ("evals", "inference") for p in sorted((PACKAGE / part).rglob("*.py"))]
    users = [str(p.relative_to(PACKAGE)) for p in files if "default_registry" in p.read_text(encoding="utf-8")]
    assert users == [], f"{users} use culturekb.kb.cultures.default_registry; take a CultureRegistry from the caller"


if __name__ == "__main__":  # print the import graph: python tests/test_architecture.py [PACKAGE_DIR]
    import sys

    target = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE
    for src, row in sorted(package_graph(target).items()):
        sys.stdout.write(f"{src:>10} -> {', '.join(f'{d} ({n})' for d, n in sorted(row.items()))}\n")


MAX_MODULE_LINES = 600
"""Issue 20: a module that grows past this is split by job (as `evals/plots.py` left `evals/reports.py`)."""


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {p.relative_to(PACKAGE.parent).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    over = {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines; split them by job: {over}"
