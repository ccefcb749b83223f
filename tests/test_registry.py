"""The one registry (culturekb.registry): lazy entries, errors that list the valid forms, the replace rule,
entry-point plug-ins, and every make_* function going through it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from culturekb import registry
from culturekb.builders.base import JudgeInput
from culturekb.builders.concepts import make_concept_extractor
from culturekb.builders.judges import LexiconJudge, LLMJudge, PrototypeJudge, make_judge
from culturekb.errors import ConfigError
from culturekb.evals import get_runner, register_runner
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.predictors import KBPriorPredictor, ModelPredictor, make_predictor
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample
from culturekb.models import OpenAICompatClient, make_client, make_embedder, register_client, register_embedder
from culturekb.registry import Registry, which
from culturekb.retrieval.retriever import open_retriever
from culturekb.retrieval.stores import list_stores, make_store, register_store
from culturekb.retrieval.stores.faiss_store import FaissStore
from culturekb.text.concepts import TextConceptExtractor

PROBE = "culturekb_registry_probe"


@pytest.fixture
def probe_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module on sys.path that no one has imported: `make(argument, **kw)` and `Widget`."""
    (tmp_path / f"{PROBE}.py").write_text(textwrap.dedent('''
        def make(argument, **kw):
            return ("made", argument, kw)

        class Widget:
            def __init__(self, *args, **kw):
                self.args, self.kw = args, kw
    '''), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(PROBE, None)
    yield PROBE
    sys.modules.pop(PROBE, None)


@pytest.fixture
def isolated_registries() -> Iterator[None]:
    """Every registration a test makes is undone afterwards."""
    with ExitStack() as stack:
        for reg in (registry.STORES, registry.EMBEDDERS, registry.CLIENTS, registry.PREDICTORS, registry.JUDGES,
                    registry.CONCEPT_EXTRACTORS, registry.RUNNERS):
            stack.enter_context(reg.isolated())
        yield


# -- lazy entries --------------------------------------------------------------------------------------------------


def test_a_lazy_entry_is_imported_on_first_use_only(probe_module: str) -> None:
    reg: Registry[Any] = Registry("widget", "culturekb.test_widgets")
    reg.register("w", f"{probe_module}:make", "w:ARG")
    assert "w" in reg and reg.names() == ["w"] and reg.forms() == ["w:ARG"]
    entry, argument = reg.entry("w:x")
    assert argument == "x" and not entry.loaded
    assert probe_module not in sys.modules  # listing, membership and lookup import nothing
    assert reg.create("w:hello", k=1) == ("made", "hello", {"k": 1})
    assert probe_module in sys.modules and entry.loaded


def test_a_broken_lazy_entry_names_its_target() -> None:
    reg: Registry[Any] = Registry("widget", "culturekb.test_widgets")
    reg.register("gone", "culturekb.no_such_module:thing")
    reg.register("notcallable", "culturekb.registry:__all__")
    with pytest.raises(ConfigError, match=r"widget 'gone' \(built-in\) points at 'culturekb.no_such_module:thing'"
                                          r", which cannot be imported"):
        reg.get("gone")
    with pytest.raises(ConfigError, match="not a class or function"):
        reg.get("notcallable")


def test_listing_the_package_registries_imports_no_backend() -> None:
    code = textwrap.dedent("""
        import sys
        from culturekb import registry
        for reg in (registry.STORES, registry.EMBEDDERS, registry.CLIENTS, registry.PREDICTORS, registry.JUDGES,
                    registry.CONCEPT_EXTRACTORS, registry.RUNNERS):
            assert reg.names() and reg.forms()
        heavy = [m for m in ("torch", "faiss", "sentence_transformers", "culturekb.evals", "culturekb.builders",
                             "culturekb.retrieval", "culturekb.inference", "culturekb.models.factory")
                 if m in sys.modules]
        print(heavy)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_built_in_entries() -> None:
    assert registry.CLIENTS.forms()[:2] == ["openai:MODEL", "hf:PATH"]
    assert {"minilm", "st:PATH", "use", "openai-embed:MODEL"} <= set(registry.EMBEDDERS.forms())
    assert {"numpy", "faiss", "qdrant"} <= set(list_stores())
    assert {"kb-prior"} <= set(registry.PREDICTORS.names())
    assert {"lexicon", "prototype"} <= set(registry.JUDGES.names())
    assert {"precomputed", "text", "vlm", "clip"} <= set(registry.CONCEPT_EXTRACTORS.names())
    assert {"artemculture", "cedar", "ricevl-vqa", "ricevl-grounding"} <= set(registry.RUNNERS.names())
    from culturekb.models.hf_client import hf_client_factory

    assert registry.CLIENTS.get("hf:/models/x") is hf_client_factory


# -- errors ----------------------------------------------------------------------------------------------------


def test_unknown_names_list_every_valid_form() -> None:
    with pytest.raises(ConfigError, match=r"unknown model client 'nope:x'; choose one of: openai:MODEL, hf:PATH"
                                          r".*entry-point group 'culturekb.model_clients'"):
        make_client("nope:x")
    with pytest.raises(ConfigError, match=r"unknown vector store backend 'annoy'; choose one of: numpy, faiss"):
        make_store("annoy", 4)
    with pytest.raises(ConfigError, match=r"embedder spec is empty; choose one of: minilm, st:PATH"):
        make_embedder("")
    with pytest.raises(ConfigError, match=r"unknown concept extractor 'ocr'; choose one of: precomputed, text"):
        make_concept_extractor("ocr")


def test_specs_accepted_by_two_registries_list_both() -> None:
    assert which("kb-prior", registry.PREDICTORS, registry.CLIENTS, kind="model") is registry.PREDICTORS
    assert which("openai:m", registry.PREDICTORS, registry.CLIENTS, kind="model") is registry.CLIENTS
    with pytest.raises(ConfigError, match=r"unknown model 'gpt'; choose one of: kb-prior, openai:MODEL, hf:PATH"
                                          r".*'culturekb.predictors' or 'culturekb.model_clients'"):
        make_predictor("gpt", augmenter=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"unknown judge 'oracle'; choose one of: lexicon, prototype, "
                                          r"openai:MODEL, hf:PATH"):
        make_judge("oracle")
    with pytest.raises(ConfigError, match="takes no value after ':'"):
        make_judge("lexicon:en")


# -- the replace rule ------------------------------------------------------------------------------------------


def _one() -> str:
    return "one"


def _two() -> str:
    return "two"


def test_a_name_is_registered_once_unless_replaced() -> None:
    reg: Registry[Any] = Registry("widget", "culturekb.test_widgets")
    reg.register("w", _one)
    reg.register("w", _one)  # the same target again is no conflict
    with pytest.raises(ConfigError, match=r"widget 'w' is already registered \(built-in: .*_one\); pass replace=True"):
        reg.register("w", _two)
    reg.register("w", _two, replace=True)
    assert reg.get("w")() == "two"
    for bad in ("", "a b", "a:b", "a/b"):
        with pytest.raises(ConfigError, match="is invalid"):
            reg.register(bad, _one)
    with pytest.raises(ConfigError, match="register a class, a function or a 'module:attr' string"):
        reg.register("x", "no-colon")


def test_an_object_and_the_string_that_names_it_are_the_same_entry() -> None:
    reg: Registry[Any] = Registry("widget", "culturekb.test_widgets")
    reg.register("w", f"{__name__}:_one", "w:FORM")
    reg.register("w", _one)  # what a module's decorator does for a lazy built-in entry
    assert reg.entry("w")[0].loaded and reg.forms() == ["w:FORM"]
    reg.register("w", f"{__name__}:_one")  # and the string again keeps the loaded object
    assert reg.entry("w")[0].target is _one
    # a re-export from a parent package names the same object (culturekb.evals.ricevl:RiceVLVQARunner)
    reg.register("r", "culturekb.evals:Runner")
    from culturekb.evals.runner import Runner

    reg.register("r", Runner)
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("r", "culturekb.evals:Setting")


def test_case_insensitive_registries() -> None:
    assert get_runner("CEDAR") is get_runner("cedar")
    assert "FAISS" in registry.STORES and "OPENAI:m" not in registry.CLIENTS


# -- entry points ------------------------------------------------------------------------------------------------


def test_entry_points_are_discovered_lazily_and_never_override(probe_module: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    group = "culturekb.test_widgets"
    found = [EntryPoint("plug", f"{probe_module}:make", group), EntryPoint("w", f"{probe_module}:Widget", group)]
    calls: list[str] = []

    def fake_entry_points(group: str) -> list[EntryPoint]:
        calls.append(group)
        return [ep for ep in found if ep.group == group]

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    reg: Registry[Any] = Registry("widget", group, plugin_form="{name}:...")
    reg.register("w", _one)
    assert reg.get("w") is _one and calls == []  # a hit never reads the entry points
    assert reg.forms() == ["w", "plug:..."]  # the built-in 'w' wins over the plug-in of the same name
    assert probe_module not in sys.modules
    assert reg.create("plug:arg") == ("made", "arg", {})
    assert reg.entry("plug")[0].origin == f"entry point {group}"
    reg.names()
    assert calls == [group]  # read once
    with reg.isolated():
        assert "plug" not in reg._entries  # forgotten inside the block, found again on the next miss
        assert "plug" in reg and calls == [group, group]
        reg.register("extra", _two)
    assert "extra" not in reg and reg.entry("plug")[0].loaded


def test_a_real_dist_info_entry_point_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_path = Path(__file__).resolve().parent / "fixtures" / "plugin_pkg"
    monkeypatch.syspath_prepend(str(plugin_path))
    with registry.RUNNERS.isolated():
        assert "toy-count" in registry.RUNNERS
        cls = get_runner("toy-count")
        assert cls.__name__ == "ToyCountRunner" and cls.name == "toy-count"
    assert "toy-count" not in registry.RUNNERS._entries
    sys.modules.pop("culturekb_toy_plugin", None)


# -- every make_* goes through the registry ----------------------------------------------------------------------


class _Recorder:
    def __init__(self, *args: Any, **kw: Any) -> None:
        self.args, self.kw = args, kw
        self.id = "recorder"


class _RecordingClient(_Recorder):
    """A full model client (its own `acomplete`) that records how its factory was called."""

    async def acomplete(self, messages: Any, **params: Any) -> Any:
        raise NotImplementedError


@pytest.mark.usefixtures("isolated_registries")
def test_every_factory_resolves_through_the_registry() -> None:
    recorder: Any = _Recorder  # stands in for a store, an embedder and a client alike
    register_store("probe", recorder)
    store = make_store("probe:hnsw", 8, ef=3)
    assert isinstance(store, _Recorder) and store.args == ("hnsw",) and store.kw == {"dim": 8, "ef": 3}
    assert "probe" in list_stores()

    register_embedder("probe", recorder, "probe:NAME")
    emb = make_embedder("probe:e5", base_url="http://x", dim=3)
    assert emb.args == ("e5",) and emb.kw == {"base_url": "http://x", "dim": 3}  # type: ignore[attr-defined]

    register_client("probe", _RecordingClient)
    client = make_client("probe:m", timeout_s=2)
    made = client.provider.client  # type: ignore[attr-defined]  # a full client goes behind the one wrapper too
    assert made.args == ("m",) and made.kw == {"base_url": None, "timeout_s": 2} and client.id == "recorder"
    register_client("probe-bad", recorder)
    with pytest.raises(ConfigError, match="neither a model provider .* nor a model client"):
        make_client("probe-bad")

    registry.PREDICTORS.register("probe", _Recorder)
    pred = make_predictor("probe:p", "AUGMENTER", seed=1)  # type: ignore[arg-type]
    assert isinstance(pred, _Recorder) and pred.args == ("p",)  # factory(argument, **options)
    assert pred.kw == {"augmenter": "AUGMENTER", "base_url": None, "seed": 1}

    registry.JUDGES.register("probe", _Recorder)
    judge = make_judge("probe", scheme="cedar14", k=2)
    assert isinstance(judge, _Recorder) and judge.args == ("",) and judge.kw == {"scheme": "cedar14", "k": 2}

    registry.CONCEPT_EXTRACTORS.register("probe", _Recorder)
    ex = make_concept_extractor("probe", fields=("title",))
    assert isinstance(ex, _Recorder) and ex.args == ("",) and ex.kw == {"fields": ("title",)}

    register_runner("probe-runner", "culturekb.evals.cedar:CedarRunner")
    assert get_runner("probe-runner").__name__ == "CedarRunner"

    # the built-ins go the same way
    assert isinstance(make_judge("lexicon", scheme="cedar14"), LexiconJudge)
    assert isinstance(make_concept_extractor("text", max_concepts=3), TextConceptExtractor)


def test_the_prototype_judge_factory(default_embedder: Any) -> None:
    judge = make_judge("prototype", embedder=default_embedder)
    assert isinstance(judge, PrototypeJudge)


# -- a plug-in client is a predictor and a judge ----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_augmenter(default_embedder: Any) -> Augmenter:
    tuples = [KnowledgeTuple(concept="crane", culture="zh", label="awe", distribution={"awe": 0.8, "contentment": 0.2},
                             support=4, rationales=["the crane is noble"])]
    return Augmenter(open_retriever(KnowledgeBase(tuples), default_embedder, backend="numpy"))


def test_a_registered_client_works_as_predictor_and_as_judge(openai_server: Any, tiny_augmenter: Augmenter) -> None:
    server = openai_server([json.dumps({"emotion": "awe", "explanation": "a noble crane"}),
                            json.dumps({"emotion": "fear", "reason": "the rationale speaks of dread"})])
    made: list[tuple[str, dict[str, Any]]] = []

    def myfake(argument: str, base_url: str | None = None, **kw: Any) -> OpenAICompatClient:
        made.append((argument, kw))
        return OpenAICompatClient(argument or "fake-vlm", base_url=server.base_url, max_retries=0, **kw)

    with registry.CLIENTS.isolated():
        register_client("myfake", myfake, "myfake[:MODEL]")
        assert "myfake[:MODEL]" in registry.CLIENTS.forms()

        predictor = make_predictor("myfake", tiny_augmenter, max_concurrency=1)
        assert isinstance(predictor, ModelPredictor)
        (pred,) = predictor.predict([Sample(id="a", culture="zh", concepts=["crane"])], mode="know")
        assert pred.label == "awe" and pred.parse_status == "json" and pred.tuples_used == ["zh::crane"]
        assert made[0] == ("", {"max_concurrency": 1, "cache_scope": tiny_augmenter.kb_version})

        judge = make_judge("myfake:judge-model", scheme="artemis9")
        assert isinstance(judge, LLMJudge)
        (verdict,) = judge.judge([JudgeInput(concept="skull", culture="en", label="fear",
                                             rationales=("a skull in the dark fills the viewer with dread",))])
        assert verdict.label == "fear"
        assert made[1][0] == "judge-model"
    assert [r["model"] for r in server.requests] == ["fake-vlm", "judge-model"]
    assert "myfake" not in registry.CLIENTS  # the test's registration is gone
    assert isinstance(make_predictor("kb-prior", tiny_augmenter, cache=None), KBPriorPredictor)


# -- one factory signature --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [registry.STORES, registry.EMBEDDERS, registry.CLIENTS, registry.PREDICTORS,
                                  registry.JUDGES, registry.CONCEPT_EXTRACTORS], ids=lambda r: r.group)
def test_every_built_in_factory_takes_the_argument_then_keywords(kind: Registry[Any]) -> None:
    import inspect

    for entry in kind.entries():
        if entry.origin != "built-in":
            continue
        params = list(inspect.signature(entry.load(kind.kind)).parameters.values())
        assert params, entry.name
        first, rest = params[0], params[1:]
        assert first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD), (entry.name, first)
        assert first.default is inspect.Parameter.empty or isinstance(first.default, str), (entry.name, first)
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in rest), (entry.name, rest)


def test_a_store_spec_argument_is_its_kind_or_its_place(tmp_path: Path) -> None:
    assert make_store("faiss:HNSW", 4).kind == "hnsw"  # type: ignore[attr-defined]
    assert make_store("qdrant::memory:", 4).location == ":memory:"  # type: ignore[attr-defined]
    on_disk = make_store(f"qdrant:{tmp_path / 'q'}", 4)
    assert on_disk.path == tmp_path / "q"  # type: ignore[attr-defined]
    on_disk.close()
    with pytest.raises(ConfigError, match=r"names where the collection lives, and so does path="):
        make_store("qdrant:/data/q", 4, path=tmp_path / "other")
    with pytest.raises(ConfigError, match=r"store 'numpy:flat': the numpy store takes no value after ':'"):
        make_store("numpy:flat", 4)


def test_options_a_part_does_not_take_are_named_before_it_runs() -> None:
    with pytest.raises(ConfigError, match=r"concept extractor 'text': bad arguments \['colour'\]"):
        make_concept_extractor("text", colour="red")
    with pytest.raises(ConfigError, match=r"concept extractor 'clip:ViT': 'clip' takes no value after ':'"):
        make_concept_extractor("clip:ViT")


def test_what_an_isolated_block_discovers_is_found_again_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    reg: Registry[Any] = Registry("thing", "culturekb.test_things", discover="_probe_discovery:discover")
    found: list[str] = []
    module = types.ModuleType("_probe_discovery")

    def discover() -> None:
        found.append("run")
        reg.register("found", _one)

    module.discover = discover  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_probe_discovery", module)
    with reg.isolated():
        assert reg.names() == ["found"]  # discovered inside the block ...
    assert reg.names() == ["found"]  # ... and again after it, not lost with the block's entries
    assert found == ["run", "run"]


def test_a_spec_argument_may_come_as_the_factorys_keyword_but_not_twice() -> None:
    flat, hnsw = make_store("faiss", 8, kind="flat"), make_store("faiss:hnsw", 8, kind="hnsw")
    assert isinstance(flat, FaissStore) and flat.kind == "flat"  # the same as make_store("faiss:flat", 8)
    assert isinstance(hnsw, FaissStore) and hnsw.kind == "hnsw"  # both ways, one value
    with pytest.raises(ConfigError, match=r"'faiss:hnsw' already names its kind \('hnsw'\); kind='flat'"):
        make_store("faiss:hnsw", 8, kind="flat")
