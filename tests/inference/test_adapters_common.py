"""What the harness adapters share (no harness needed), missing harnesses, and the declared entry points."""

from __future__ import annotations

import importlib
import math
import sys
import tomllib
from pathlib import Path

import pytest

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.inference.adapters import KnowledgeInjector, prepend_block
from culturekb.inference.augmenter import Augmenter

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


@pytest.fixture
def injector(small_retriever):
    return KnowledgeInjector(Augmenter(small_retriever), culture="English")


def test_culture_and_concepts_from_document_fields(injector):
    assert injector.culture == "en"  # an alias resolved once
    assert injector.culture_of({"culture": "zh"}) == "zh"
    for missing in ({}, {"culture": ""}, {"culture": math.nan}, {"culture": None}, None):
        assert injector.culture_of(missing) == "en"
    assert injector.concepts_of({"concepts": "bamboo; full moon|crane"}) == ["bamboo", "full moon", "crane"]
    assert injector.concepts_of({"concepts": ["skull", " "]}) == ["skull"]
    assert injector.concepts_of({"concepts": ""}) is None and injector.concepts_of({}) is None
    nested = KnowledgeInjector(injector.augmenter, culture_field="meta.country")
    assert nested.culture_of({"meta": {"country": "zh"}}) == "zh" and nested.culture_of({"meta": {}}) is None


def test_inject_many_frames_block_in_the_culture_language(injector):
    storm, moon, none = injector.inject_many([
        ({"culture": "en"}, "A storm over the sea", "doc 0"),
        ({"culture": "zh", "concepts": ["full moon"]}, "ignored when concepts are given", "doc 1"),
        ({"culture": "zh"}, "a spaceship", "doc 2"),
    ])
    assert storm.tuple_ids == ("en::storm",) and storm.concepts[0] == "storm"
    assert storm.block.startswith("Notes from the annotations of people of the English-speaking culture")
    assert storm.block.splitlines()[-1].startswith("- storm: mostly fear")
    assert moon.block.startswith("以下注释来自中华文化背景观众的标注") and moon.tuple_ids == ("zh::full moon",)
    assert none.block == "" and none.tuple_ids == ()
    bare = KnowledgeInjector(injector.augmenter, template=None).inject_many([({"culture": "en"}, "storm", "d")])[0]
    assert bare.block.startswith("- storm: mostly fear")
    assert prepend_block(bare.block, "Q?") == f"{bare.block}\nQ?" and prepend_block("", "Q?") == "Q?"


def test_unknown_or_missing_culture(injector, small_retriever):
    with pytest.raises(ConfigError, match="doc 3: culture 'sw' is not in this KB.*on_unknown_culture=skip"):
        injector.inject_many([({"culture": "sw"}, "storm", "doc 3")])
    lenient = KnowledgeInjector(Augmenter(small_retriever), on_unknown_culture="skip")
    [skipped] = lenient.inject_many([({"culture": "sw"}, "storm", "doc 3")])
    assert skipped.block == "" and skipped.skipped == "culture 'sw' is not in this KB"
    with pytest.raises(ConfigError, match="doc 4: no culture.*field 'culture' is missing.*culture=ID"):
        lenient.inject_many([({}, "storm", "doc 4")])
    with pytest.raises(ConfigError, match="on_unknown_culture"):
        # an invalid choice on purpose: the check behind the Literal type must refuse it at run time
        KnowledgeInjector(Augmenter(small_retriever), on_unknown_culture="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown mode"):
        KnowledgeInjector(Augmenter(small_retriever), mode="telepathy")
    with pytest.raises(ConfigError, match="no prompt template"):
        KnowledgeInjector(Augmenter(small_retriever), template="no_such_template")


def test_check_version(injector):
    v = injector.kb_version
    injector.check_version(v, "here")
    with pytest.raises(ConfigError, match=f"here: kb_version is required.*kb_version={v}"):
        injector.check_version(None, "here")
    with pytest.raises(ConfigError, match=f"does not match the KB, whose version is {v}"):
        injector.check_version("0" * 16, "here")
    # what a harness's argument parser makes of an all-digit or float-looking version still matches
    from culturekb.inference.adapters._common import _same_after_parse

    assert _same_after_parse(1234567890123456, "1234567890123456")
    assert _same_after_parse(float("12e4"), "12e4") and not _same_after_parse(12.0, "12e4")
    assert not _same_after_parse(True, "1")


@pytest.mark.parametrize(("module", "harness", "package"), [
    ("lmms_eval", "lmms_eval", "lmms-eval"),
    ("vlmevalkit", "vlmeval", "nvidia-vlmeval"),
    ("inspect_ai", "inspect_ai", "inspect-ai"),
])
def test_missing_harness_raises_with_pip_line(monkeypatch, module, harness, package):
    for name in [harness, *(m for m in list(sys.modules) if m.startswith(f"{harness}."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed, even when other tests imported it
    monkeypatch.delitem(sys.modules, f"culturekb.inference.adapters.{module}", raising=False)
    with pytest.raises(MissingExtraError, match=r"pip install 'culturekb\[harness\]'") as err:
        importlib.import_module(f"culturekb.inference.adapters.{module}")
    assert err.value.package == package


def test_lazy_names_and_light_package_import():
    import culturekb.inference.adapters as adapters

    assert set(adapters.__all__) >= {"CultureKBSimple", "CultureKBChat", "CultureKBVLM", "culturekb_knowledge",
                                     "run_vlmevalkit", "lmms_eval_manifests"}
    with pytest.raises(AttributeError):
        adapters.no_such_name  # noqa: B018
    code = ("import sys, culturekb.inference.adapters; "
            "print(sorted(m for m in ('lmms_eval', 'vlmeval', 'inspect_ai', 'torch') if m in sys.modules))")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_entry_points_are_declared():
    """pyproject declares the lmms-eval model and the inspect_ai extension (what `pip install` registers)."""
    eps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"].get("entry-points", {})
    assert eps.get("lmms_eval.models", {}).get("culturekb") == "culturekb.inference.adapters:lmms_eval_manifests", (
        'add to pyproject.toml: [project.entry-points."lmms_eval.models"] '
        'culturekb = "culturekb.inference.adapters:lmms_eval_manifests"'
    )
    assert eps.get("inspect_ai", {}).get("culturekb") == "culturekb.inference.adapters.inspect_ai", (
        'add to pyproject.toml: [project.entry-points.inspect_ai] culturekb = "culturekb.inference.adapters.inspect_ai"'
    )
