"""The adapters' shared argument vocabulary, its deprecated spellings and `harness_args_for` (no harness needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.adapters import ARGUMENTS, DEPRECATED_ALIASES, harness_args_for, kb_version_of
from culturekb.inference.adapters._args import canonical_args

DOC = Path(__file__).parents[2] / "docs" / "adapters.md"


@pytest.fixture(scope="module")
def kb_dir(small_kb, tmp_path_factory):
    path = tmp_path_factory.mktemp("args_kb") / "kb"
    small_kb.save(path)
    return path


def test_harness_args_for_a_kb(kb_dir, small_kb):
    version = small_kb.version
    assert kb_version_of(kb_dir) == version
    args = harness_args_for(kb_dir, culture="zh", prompt_language="en")
    kb_dir = kb_dir.resolve()  # the pasted path is absolute
    assert args["kb_version"] == version
    assert args["lmms_eval"] == f"inner_model=INNER,kb={kb_dir},kb_version={version},culture=zh,prompt_language=en"
    assert args["inspect_ai"].split(" -S ")[:2] == [f"-S kb={kb_dir}", f"kb_version={version}"]
    assert "-S then_generate=true" in args["inspect_ai"] and "inner_model" not in args["inspect_ai"]
    assert args["vlmevalkit"].startswith(f"kb='{kb_dir}', kb_version='{version}'")
    assert harness_args_for(kb_dir, inner_model="openai")["lmms_eval"].startswith("inner_model=openai,kb=")
    with pytest.raises(ConfigError, match="unknown argument.*'colour'"):
        harness_args_for(kb_dir, colour="red")
    with pytest.raises(ConfigError, match="does not exist"):
        harness_args_for(kb_dir.parent / "missing")


def test_harness_args_for_a_relative_path_with_spaces(tmp_path, small_kb, monkeypatch):
    """Pasted elsewhere, the path still points at the KB; the shell keeps a spaced path in one argument."""
    import shlex

    small_kb.save(tmp_path / "my kb")
    monkeypatch.chdir(tmp_path)
    args = harness_args_for("my kb")
    assert f"kb={tmp_path.resolve() / 'my kb'}," in args["lmms_eval"]
    words = shlex.split(args["inspect_ai"])
    assert words[:2] == ["-S", f"kb={tmp_path.resolve() / 'my kb'}"]


def test_deprecated_spellings_warn_and_map():
    with pytest.warns(FutureWarning, match="kb_dir= is deprecated; use kb="):
        assert canonical_args({"kb_dir": "x", "tau": None}, "here") == {"kb": "x"}
    with pytest.warns(FutureWarning, match="kb_template"):
        assert canonical_args({"kb_template": "none", "kb_tau": 0.5}, "here") == {"template": "none", "tau": 0.5}
    with pytest.raises(ConfigError, match="both kb_tau= and tau="):
        canonical_args({"kb_tau": 0.5, "tau": 0.6}, "here")
    assert set(DEPRECATED_ALIASES.values()) <= {a.name for a in ARGUMENTS}


def test_docs_table_lists_every_argument_and_alias():
    text = DOC.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))
    names = {a.name for a in ARGUMENTS}
    assert rows >= names, f"docs/adapters.md lacks rows for {sorted(names - rows)}"
    for old, new in DEPRECATED_ALIASES.items():
        assert f"`{old}`" in text and f"`{new}`" in text
