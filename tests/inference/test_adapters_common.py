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
    assert moon.block.startswith("以下注释来自中华文化背景的人的标注") and moon.tuple_ids == ("zh::full moon",)
    assert none.block == "" and none.tuple_ids == ()
    bare = KnowledgeInjector(injector.augmenter, template=None).inject_many([({"culture": "en"}, "storm", "d")])[0]
    assert bare.block.startswith("- storm: mostly fear")
    assert prepend_block(bare.block, "Q?") == f"{bare.block}\nQ?" and prepend_block("", "Q?") == "Q?"


def test_prompt_language_sets_the_header_language(injector):
    english = KnowledgeInjector(injector.augmenter, prompt_language="EN")
    [moon] = english.inject_many([({"culture": "zh", "concepts": ["full moon"]}, "q", "doc 1")])
    assert moon.block.startswith("Notes from the annotations of people of the") and "full moon" in moon.block
    assert moon.knowledge is not None and moon.knowledge.language == "en"
    [native] = injector.inject_many([({"culture": "zh", "concepts": ["full moon"]}, "q", "doc 1")])
    assert native.block.startswith("以下注释来自中华文化背景的人的标注")


def test_concepts_from_a_harness_prompt_leave_out_instructions_and_keep_options_apart(injector):
    mcq = ("Question: Which emotion does the painting evoke in this culture?\nOptions:\nA. fear of the storm\n"
           "B. calm bamboo\nAnswer with the option's letter from the given choices directly.")
    [both] = injector.inject_many([({"culture": "en"}, mcq, "doc 0")])
    assert both.concepts == ("storm", "bamboo") and both.tuple_ids == ("en::storm", "en::bamboo")
    # an instruction sentence gives nothing, though its words ("please", "step") are no instruction words
    noisy = ("Hint: a storm at night.\nQuestion: Why do people fear it?\nA. bamboo\nB. crane\n"
             "Please think step by step, then select the correct answer from the options above.")
    whole = injector.augmenter.text_concepts([_sample(noisy)])[0]
    assert {"please", "step"} & set(whole)  # what reading the prompt as one text gives
    parts = injector.prompt_concepts([_sample(noisy)])[0]
    assert parts == ["people", "storm", "night", "bamboo", "crane"]  # question, context, then the options
    # the question's concepts come before the options' (inline options too)
    q_first = injector.prompt_concepts([_sample("Why is the storm there? A. bamboo B. crane")])[0]
    assert q_first == ["storm", "bamboo", "crane"]
    assert injector.prompt_concepts([_sample("Answer with one word. Choose a letter.")]) == [[]]


def _sample(text):
    from culturekb.kb.schema import Sample

    return Sample(id="s", culture="en", text=text)


def test_sidecar_lines_stay_whole_under_concurrent_writers(injector, tmp_path):
    import threading

    from culturekb.inference.adapters._sidecar import SIDECAR_NAME, SidecarWriter, read_sidecar, sidecar_row

    [storm] = injector.inject_many([({"culture": "en"}, "A storm over the sea", "doc 0")])
    row = sidecar_row("test", 0, storm, injector.kb_version)
    assert row["matches"] == [{"id": "en::storm", "query": "storm", "kind": "exact", "score": 1.0}]
    assert row["block"] == storm.block and row["kb_version"] == injector.kb_version and row["culture"] == "en"
    writer = SidecarWriter(tmp_path)
    assert writer.path == tmp_path / SIDECAR_NAME

    def write(k):
        for j in range(25):
            writer.write([{**row, "sample_id": f"{k}-{j}", "block": row["block"] * 50}])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = read_sidecar(tmp_path)  # every line parses: none torn or interleaved
    assert len(rows) == 200 and len({r["sample_id"] for r in rows}) == 200
    with pytest.raises(ConfigError, match="names no file"):
        SidecarWriter("none")


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
    injector.check_version(None, "here")  # not given: read from the KB
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
