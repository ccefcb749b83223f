"""The VLMEvalKit plug-in against the real `nvidia-vlmeval`: a tiny local TSV and a scripted inner model."""

from __future__ import annotations

import importlib.util
import ssl

import pytest

from tests.inference.conftest import restore_pil_globals

if importlib.util.find_spec("vlmeval") is None:
    pytest.skip("needs the harness extra: pip install 'culturekb[harness]'", allow_module_level=True)

from vlmeval.config import supported_VLM  # noqa: E402
from vlmeval.vlm.base import BaseModel  # noqa: E402

from culturekb.errors import ConfigError  # noqa: E402
from culturekb.inference.adapters.vlmevalkit import (  # noqa: E402
    CultureKBVLM,
    register,
    registered_name,
    run_vlmevalkit,
)
from culturekb.kb import KnowledgeBase  # noqa: E402

pytestmark = pytest.mark.slow


restore_pil_globals()  # the harness import above changed them


class ScriptedVLM(BaseModel):
    """Records every message it is sent; answers A."""

    def __init__(self, custom: bool = False):
        super().__init__()
        self.custom = custom
        self.seen: list[list[dict]] = []

    def use_custom_prompt(self, dataset):
        return self.custom

    def build_prompt(self, line, dataset=None):
        return [{"type": "image", "value": line["image_path"]}, {"type": "text", "value": f"CUSTOM {line['question']}"}]

    def generate_inner(self, message, dataset=None):
        self.seen.append(message)
        return "A"


@pytest.fixture(scope="module")
def kb_dirs(small_kb, tmp_path_factory):
    root = tmp_path_factory.mktemp("vlmeval_kb")
    small_kb.save(root / "kb")
    small_kb.replace([t for t in small_kb if t.concept != "skull"]).save(root / "kb2")
    return root / "kb", root / "kb2"


@pytest.fixture(scope="module")
def tsv(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("vlmeval_data")
    rows = [
        ("0", "What do people feel about the storm over the sea?", "fear", "awe", "A", "en", ""),
        ("1", "How does the bamboo grove under the full moon feel?", "fear", "contentment", "B", "zh",
         "bamboo|full moon"),
    ]
    lines = ["index\tquestion\tA\tB\tanswer\tculture\tconcepts\timage_path"]
    for idx, q, a, b, ans, culture, concepts in rows:
        img = root / f"img{idx}.png"
        Image.new("RGB", (8, 8), (10 * int(idx), 20, 30)).save(img)
        lines.append("\t".join([idx, q, a, b, ans, culture, concepts, str(img)]))
    path = root / "ckb_toy_mcq.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_keeps_certificate_verification():
    assert ssl._create_default_https_context is ssl.create_default_context


def test_runner_registers_wraps_and_scores(kb_dirs, tsv, tmp_path):
    kb, kb2 = kb_dirs
    version = KnowledgeBase.load(kb).version
    inner = ScriptedVLM()
    run = run_vlmevalkit(inner, tsv, kb, work_dir=tmp_path)
    assert run.model_name == registered_name("ScriptedVLM", version) and run.model_name in supported_VLM
    assert run.dataset == "ckb_toy_mcq" and run.result_file.is_file()
    assert run.scores is not None and run.scores[0]["Overall"] == pytest.approx(0.5)  # answers A; gold A, B
    storm, bamboo = inner.seen
    assert storm[0]["type"] == "image" and bamboo[0]["type"] == "image"  # the image stays first
    storm_text, bamboo_text = storm[-1]["value"], bamboo[-1]["value"]
    assert storm_text.startswith("Notes from the annotations of people of the English-speaking culture")
    assert "- storm: mostly fear" in storm_text and "Question: What do people feel about the storm" in storm_text
    assert bamboo_text.startswith("以下注释来自中华文化背景的人的标注") and "满月让人思念远方的亲人" in bamboo_text
    assert run.injections["1"].tuple_ids == ("zh::bamboo", "zh::full moon") and run.with_knowledge == 2

    again = run_vlmevalkit(inner, tsv, kb, work_dir=tmp_path)
    assert len(inner.seen) == 2 and again.result_file == run.result_file  # same KB: predictions reused
    other = run_vlmevalkit(inner, tsv, kb2, work_dir=tmp_path)
    assert other.model_name != run.model_name and len(inner.seen) == 4  # another KB: asked again


def test_custom_prompt_of_the_inner_model_gets_the_block(kb_dirs, tsv, tmp_path):
    kb, _ = kb_dirs
    inner = ScriptedVLM(custom=True)
    run_vlmevalkit(inner, tsv, kb, work_dir=tmp_path, evaluate=False, culture_field=None, culture="en",
                   concepts_field=None)
    texts = [m[-1]["value"] for m in inner.seen]
    assert all(t.splitlines()[-1].startswith("CUSTOM ") for t in texts)
    assert "- storm: mostly fear" in texts[0] and "- bamboo: mostly amusement" in texts[1]  # en knowledge for all


def test_wrapper_checks_and_registry(kb_dirs, tsv):
    kb, kb2 = kb_dirs
    name = register(ScriptedVLM, kb, culture="en")
    model = supported_VLM[name]()
    assert isinstance(model, CultureKBVLM) and isinstance(model.inner, ScriptedVLM)
    assert model.use_custom_prompt("anything") and model.kb_version == KnowledgeBase.load(kb).version
    with pytest.raises(ConfigError, match="does not match the KB"):
        CultureKBVLM(ScriptedVLM(), kb, kb_version=KnowledgeBase.load(kb2).version)
    with pytest.raises(ConfigError, match="not a VLMEvalKit model"):
        CultureKBVLM("no-such-vlm", kb)
    with pytest.raises(ConfigError, match="does not exist"):
        run_vlmevalkit(ScriptedVLM(), tsv.parent / "missing.tsv", kb)
    strict = CultureKBVLM(ScriptedVLM(custom=True), kb)
    with pytest.raises(ConfigError, match="index 7.*culture 'sw' is not in this KB"):
        strict.build_prompt({"index": 7, "question": "storm", "culture": "sw",
                            "image_path": str(tsv.parent / "img0.png")}, "d")


def _gpt4v(server):
    """VLMEvalKit's own OpenAI-compatible API model, pointed at the scripted server."""
    return {"class": "GPT4V", "model": "scripted", "api_base": f"{server.base_url}/chat/completions", "key": "k",
            "retry": 1, "wait": 0, "img_size": -1}


def _sent_texts(server):
    out = []
    for body in server.requests:
        for m in body["messages"]:
            if m["role"] == "user":
                c = m["content"]
                out.append(c if isinstance(c, str) else " ".join(p.get("text", "") for p in c if p["type"] == "text"))
    return out


def test_api_inner_model_end_to_end_writes_the_sidecar(kb_dirs, tsv, tmp_path, openai_server):
    from culturekb.inference.adapters._sidecar import read_sidecar

    kb, _ = kb_dirs
    server = openai_server(["A"])
    run = run_vlmevalkit(_gpt4v(server), tsv, kb, work_dir=tmp_path, prompt_language="en")
    version = KnowledgeBase.load(kb).version
    assert run.model_name == f"scripted_culturekb_{version}" and run.result_file.is_file()
    texts = _sent_texts(server)
    assert len(texts) == 2 and all(t.startswith("Notes from the annotations of people of the") for t in texts)
    rows = {r["sample_id"]: r for r in read_sidecar(run.result_file.parent)}  # beside the predictions
    assert set(rows) == {"0", "1"} and rows["1"]["tuple_ids"] == ["zh::bamboo", "zh::full moon"]
    assert rows["0"]["block"] in " ".join(texts) and rows["0"]["dataset"] == "ckb_toy_mcq"
    assert rows["1"]["language"] == "en" and rows["0"]["kb_version"] == version


def test_config_json_route_through_run_py(kb_dirs, tsv, tmp_path, openai_server, monkeypatch):
    """VLMEvalKit's run.py --config with a "class": "CultureKBVLM" model (registered by run_config first)."""
    from culturekb.inference.adapters._sidecar import read_sidecar
    from culturekb.inference.adapters.vlmevalkit import main, prepare_config, run_config

    kb, _ = kb_dirs
    server = openai_server(["B"])
    monkeypatch.setenv("LMUData", str(tsv.parent))
    config = {"model": {"api_ckb": {"class": "CultureKBVLM", "model": _gpt4v(server), "kb": str(kb)}},
              "data": {"ckb_toy_mcq": {"class": "ImageMCQDataset", "dataset": "ckb_toy_mcq"}}}
    work = tmp_path / "outputs"
    prepared = run_config(config, work, ["--mode", "infer"])
    version = KnowledgeBase.load(kb).version
    [name] = prepared["model"]
    assert name == f"api_ckb_culturekb_{version}" and prepared["model"][name] == {}
    assert list((work / name).rglob(f"{name}_ckb_toy_mcq.xlsx")), "run.py wrote no predictions"
    texts = _sent_texts(server)
    assert len(texts) == 2 and {t[:5] for t in texts} == {"Notes", "以下注释来"}  # no prompt_language: each culture's
    rows = read_sidecar(work / name)
    assert sorted(r["sample_id"] for r in rows) == ["0", "1"] and rows[0]["harness"] == "vlmevalkit"

    with pytest.raises(ConfigError, match='needs "model".*and "kb"'):
        prepare_config({"model": {"x": {"class": "CultureKBVLM", "kb": str(kb)}}, "data": {}}, work)
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert main(["--config", str(bad)]) == 2
