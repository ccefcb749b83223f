"""The lmms-eval plug-in against the real lmms-eval: a local task, a scripted inner model that records prompts."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest

from tests.inference.conftest import restore_pil_globals

pytest.importorskip("lmms_eval", reason="needs the harness extra: pip install 'culturekb[harness]'")

from lmms_eval.api.instance import Instance  # noqa: E402
from lmms_eval.api.model import lmms  # noqa: E402
from lmms_eval.models import MODEL_REGISTRY_V2, get_model  # noqa: E402
from lmms_eval.models.registry_v2 import ModelManifest, ModelRegistryV2  # noqa: E402

from culturekb.errors import ConfigError  # noqa: E402
from culturekb.inference.adapters import lmms_eval_manifests  # noqa: E402
from culturekb.inference.adapters.lmms_eval import (  # noqa: E402
    CultureKBChat,
    CultureKBSimple,
    model_args_for,
    register,
)
from culturekb.kb import KnowledgeBase  # noqa: E402

pytestmark = pytest.mark.slow


restore_pil_globals()  # the harness import above changed them

RECORD: dict[str, list] = {"init": [], "simple": [], "chat": [], "loglikelihood": []}
_SCRIPTED = "ckb_scripted_lmms_models"


class RecorderSimple(lmms):
    """A scripted simple lmms-eval model: records each context, answers `answer`."""

    is_simple = True

    def __init__(self, answer: str = "fear", **kwargs):
        super().__init__()
        self.answer = str(answer)
        RECORD["init"].append(dict(kwargs, answer=answer))

    def generate_until(self, requests):
        for req in requests:
            RECORD["simple"].append(req.args[0])
        return [self.answer] * len(requests)

    def generate_until_multi_round(self, requests):
        return self.generate_until(requests)

    def loglikelihood(self, requests):
        RECORD["loglikelihood"].extend(req.args[0] for req in requests)
        return [(-1.0, False)] * len(requests)


class RecorderChat(RecorderSimple):
    """A scripted chat lmms-eval model: records the messages `doc_to_messages` builds."""

    is_simple = False

    def generate_until(self, requests):
        for req in requests:
            _, doc_to_messages, _, doc_id, task, split = req.args
            RECORD["chat"].append(doc_to_messages(self.task_dict[task][split][doc_id]))
        return [self.answer] * len(requests)


DOCS = [
    {"id": 0, "question": "What do you feel about the storm over the sea?", "answer": "fear", "culture": "en"},
    {"id": 1, "question": "How does this painting make you feel?", "answer": "contentment", "culture": "zh",
     "concepts": "bamboo; full moon"},
]


@pytest.fixture(scope="module", autouse=True)
def scripted_models():
    module = types.ModuleType(_SCRIPTED)
    vars(module).update(RecorderSimple=RecorderSimple, RecorderChat=RecorderChat)
    sys.modules[_SCRIPTED] = module
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest("ckb_recorder", simple_class_path=f"{_SCRIPTED}.RecorderSimple",
                      chat_class_path=f"{_SCRIPTED}.RecorderChat"), overwrite=True)
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest("ckb_recorder_simple_only", simple_class_path=f"{_SCRIPTED}.RecorderSimple"), overwrite=True)
    register()  # what the lmms_eval.models entry point does once pyproject declares it
    yield
    sys.modules.pop(_SCRIPTED, None)


@pytest.fixture(autouse=True)
def clear_record():
    for v in RECORD.values():
        v.clear()


@pytest.fixture(scope="module")
def kb_dirs(small_kb, tmp_path_factory):
    root = tmp_path_factory.mktemp("lmms_kb")
    small_kb.save(root / "kb")
    other = small_kb.replace([t for t in small_kb if t.concept != "skull"])
    other.save(root / "kb2")
    return root / "kb", root / "kb2"


@pytest.fixture(scope="module")
def task_manager(tmp_path_factory):
    from lmms_eval.tasks import TaskManager

    root = tmp_path_factory.mktemp("lmms_task")
    data = root / "docs.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    (root / "tasks").mkdir()
    (root / "tasks" / "ckb_toy.yaml").write_text(
        f"""task: ckb_toy
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
  cache_dir: {root / 'hf'}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "answer"
generation_kwargs:
  max_new_tokens: 8
  temperature: 0
  do_sample: false
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
""", encoding="utf-8")
    return TaskManager(include_path=str(root / "tasks"), include_defaults=False)


def _version(kb_dir: Path) -> str:
    return KnowledgeBase.load(kb_dir).version


def _evaluate(task_manager, model_args: str, **kw):
    from lmms_eval.evaluator import simple_evaluate

    return simple_evaluate(model="culturekb", model_args=model_args, tasks=["ckb_toy"], task_manager=task_manager,
                           batch_size=1, **kw)


def test_simple_variant_puts_block_before_each_context(kb_dirs, task_manager, tmp_path):
    kb, _ = kb_dirs
    args = model_args_for(str(kb), "ckb_recorder", "answer=fear")
    assert f"kb_version={_version(kb)}" in args
    out = _evaluate(task_manager, args, force_simple=True, use_cache=str(tmp_path / "cache"))
    storm, bamboo = RECORD["simple"]
    # doc 0, culture en, concepts from the question: the storm tuple, then the question itself
    assert storm.startswith("Notes from the annotations of people of the English-speaking culture")
    assert "- storm: mostly fear" in storm and storm.endswith(DOCS[0]["question"])
    # doc 1, culture zh, concepts from the document's field: Chinese header and labels
    assert bamboo.startswith("以下注释来自中华文化背景的人的标注") and "满月让人思念远方的亲人" in bamboo
    assert "storm" not in bamboo and bamboo.endswith(DOCS[1]["question"])
    assert out["results"]["ckb_toy"]["exact_match,none"] == pytest.approx(0.5)
    assert "CultureKBSimple (simple)" in out["config"]["model_backend"]
    assert RECORD["init"][0]["answer"] == "fear" and RECORD["init"][0]["batch_size"] == 1  # inner got its args


def test_chat_variant_puts_block_into_first_user_message(kb_dirs, task_manager):
    kb, _ = kb_dirs
    out = _evaluate(task_manager, model_args_for(str(kb), "ckb_recorder", culture_field="culture"))
    assert "CultureKBChat (chat)" in out["config"]["model_backend"]
    assert len(RECORD["chat"]) == 2
    for messages, doc in zip(RECORD["chat"], DOCS, strict=True):
        user = [m for m in messages if m["role"] == "user"][0]
        text = [p for p in user["content"] if p["type"] == "text"][0]["text"]
        assert text.endswith(doc["question"]) and text != doc["question"]
    assert "- storm: mostly fear" in [p for p in RECORD["chat"][0][0]["content"] if p["type"] == "text"][0]["text"]


def test_kb_version_is_part_of_the_model_identity(kb_dirs, small_kb, task_manager, tmp_path):
    kb, kb2 = kb_dirs
    cache = str(tmp_path / "cache")
    args = model_args_for(str(kb), "ckb_recorder")
    _evaluate(task_manager, args, force_simple=True, use_cache=cache)
    assert len(RECORD["simple"]) == 2
    _evaluate(task_manager, args, force_simple=True, use_cache=cache)
    assert len(RECORD["simple"]) == 2  # same KB, same arguments: served from lmms-eval's response cache
    _evaluate(task_manager, model_args_for(str(kb2), "ckb_recorder"), force_simple=True, use_cache=cache)
    assert len(RECORD["simple"]) == 4  # another KB: another identity, asked again

    # kb_version left out: read from the KB, and still in the cache's identity (a KB rebuilt in place is asked again)
    here = tmp_path / "kb"
    small_kb.save(here)
    no_version = f"inner_model=ckb_recorder,kb={here}"
    _evaluate(task_manager, no_version, force_simple=True, use_cache=cache)
    _evaluate(task_manager, no_version, force_simple=True, use_cache=cache)
    assert len(RECORD["simple"]) == 6  # the second run came from the cache
    shutil.rmtree(here)
    small_kb.replace([t for t in small_kb if t.concept != "skull"]).save(here)
    _evaluate(task_manager, no_version, force_simple=True, use_cache=cache)
    assert len(RECORD["simple"]) == 8  # same arguments, rebuilt KB: asked again

    with pytest.raises(ConfigError, match=f"does not match the KB, whose version is {_version(kb)}"):
        CultureKBSimple.create_from_arg_string(f"inner_model=ckb_recorder,kb={kb},kb_version={_version(kb2)}")


def test_old_spellings_warn_and_prompt_language(kb_dirs):
    kb, _ = kb_dirs
    with pytest.warns(FutureWarning, match="kb_template= is deprecated; use template="):
        model = CultureKBSimple.create_from_arg_string(
            f"inner_model=ckb_recorder,kb={kb},kb_template=none,kb_tau=0.9,prompt_language=en,answer=awe")
    assert RECORD["init"][-1]["answer"] == "awe" and "kb_tau" not in RECORD["init"][-1]  # ours stay ours
    model.task_dict["t"] = {"test": [{"culture": "zh", "concepts": ["skull"]}]}
    model.generate_until([_instance("generate_until", ("Which emotion?", {}, None, 0, "t", "test"))])
    assert RECORD["simple"][-1].startswith("- skull: mostly fear")  # template=none: the bare lines, in English


def _instance(kind, args, doc_id=0):
    return Instance(request_type=kind, arguments=args, idx=0,
                    metadata={"task": "t", "doc_id": doc_id, "repeats": 1})


def test_loglikelihood_unknown_culture_and_bad_arguments(kb_dirs):
    kb, _ = kb_dirs
    v = _version(kb)
    model = CultureKBSimple(inner_model="ckb_recorder", kb=str(kb), kb_version=v)
    model.task_dict["t"] = {"test": [{"culture": "zh", "concepts": ["skull"]}, {"culture": "sw"}, {}]}
    reqs = [_instance("loglikelihood", ("Which emotion?", " fear", None, 0, "t", "test")),
            _instance("loglikelihood", ("", " fear"))]  # an unconditional request keeps its empty context
    assert model.loglikelihood(reqs) == [(-1.0, False)] * 2
    first, second = RECORD["loglikelihood"]
    assert "- skull" in first and first.endswith("Which emotion?") and second == ""
    assert model.injections[("t", "test", 0)].tuple_ids == ("zh::skull",)

    with pytest.raises(ConfigError, match="doc 1.*culture 'sw' is not in this KB.*on_unknown_culture=skip"):
        model.generate_until([_instance("generate_until", ("q", {}, None, 1, "t", "test"), 1)])
    with pytest.raises(ConfigError, match="doc 2: no culture.*culture=ID"):
        model.generate_until([_instance("generate_until", ("q", {}, None, 2, "t", "test"), 2)])

    lenient = CultureKBSimple(inner_model="ckb_recorder", kb=str(kb), kb_version=v, on_unknown_culture="skip",
                              culture="en")
    lenient.task_dict["t"] = model.task_dict["t"]
    lenient.generate_until([_instance("generate_until", ("storm at night", {}, None, i, "t", "test"), i)
                            for i in (1, 2)])
    assert RECORD["simple"][0] == "storm at night"  # sw: skipped, sent as it was
    assert "- storm: mostly fear" in RECORD["simple"][1]  # no culture field: the default culture
    assert lenient.injections[("t", "test", 1)].skipped == "culture 'sw' is not in this KB"

    with pytest.raises(ConfigError, match="inner_model is required"):
        CultureKBSimple(kb=str(kb), kb_version=v)
    with pytest.raises(ConfigError, match="not a registered lmms-eval model"):
        CultureKBSimple(inner_model="no_such_model", kb=str(kb), kb_version=v)
    with pytest.raises(ConfigError, match="only a simple implementation.*--force_simple"):
        CultureKBChat(inner_model="ckb_recorder_simple_only", kb=str(kb), kb_version=v)
    with pytest.raises(ConfigError, match="does not exist"):
        CultureKBSimple(inner_model="ckb_recorder", kb=str(kb.parent / "missing"), kb_version=v)


def test_manifests_resolve_both_variants():
    registry = ModelRegistryV2()
    for manifest in lmms_eval_manifests():
        registry.register_manifest(manifest)
    assert registry.get_model_class("culturekb") is CultureKBChat
    assert registry.get_model_class("culturekb", force_simple=True) is CultureKBSimple
    assert get_model("culturekb", force_simple=True) is CultureKBSimple



def test_lmms_eval_cli_with_an_openai_inner_model_files_and_logs_what_was_sent(kb_dirs, task_manager, tmp_path,
                                                                               openai_server, monkeypatch):
    """The lmms-eval command line, its `openai` model against the scripted server: results filed under culturekb
    and the KB version, each logged input the prompt sent, the sidecar beside the results."""
    from lmms_eval.__main__ import cli_evaluate

    from culturekb.inference.adapters._sidecar import read_sidecar

    kb, _ = kb_dirs
    server = openai_server(lambda body: "fear")
    out = tmp_path / "lmms_out"
    monkeypatch.setattr(sys, "argv", [
        "lmms-eval", "--model", "culturekb", "--tasks", "ckb_toy", "--batch_size", "1", "--force_simple",
        "--include_path", str(task_manager.include_path[0] if isinstance(task_manager.include_path, list)
                              else task_manager.include_path),
        "--output_path", str(out), "--log_samples", "--model_args",
        f"inner_model=openai,kb={kb},prompt_language=en,model_version=scripted,base_url={server.base_url},"
        "api_key=test-key,max_retries=1",
    ])
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cli_evaluate()
    version = _version(kb)
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    assert folder.name == f"culturekb_{version}_scripted"  # not "openai", beside the baseline runs
    sent = [m["content"] for body in server.requests for m in body["messages"] if m["role"] == "user"]
    texts = [c if isinstance(c, str) else " ".join(p.get("text", "") for p in c if p.get("type") == "text")
             for c in sent]
    assert len(texts) == 2 and all(t.startswith("Notes from the annotations of people of the") for t in texts)
    [samples_file] = folder.glob("*_samples_ckb_toy.jsonl")
    logged = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
    by_doc = {s["doc_id"]: s for s in logged}
    assert "- storm: mostly fear" in by_doc[0]["input"] and by_doc[0]["input"].endswith(DOCS[0]["question"])
    assert by_doc[1]["input"].startswith("Notes from the annotations of people of the")  # en header for zh docs
    rows = {r["sample_id"]: r for r in read_sidecar(folder)}
    assert set(rows) == {0, 1} and rows[1]["tuple_ids"] == ["zh::bamboo", "zh::full moon"]
    assert rows[0]["block"] in by_doc[0]["input"] and rows[0]["kb_version"] == version
    assert rows[0]["matches"][0]["kind"] == "exact" and rows[0]["task"] == "ckb_toy"
