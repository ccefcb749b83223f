"""The inspect_ai solver in a real `inspect_ai.eval` run on the offline `mockllm/model`."""

from __future__ import annotations

import pytest

from tests.inference.conftest import restore_pil_globals

pytest.importorskip("inspect_ai", reason="needs the harness extra: pip install 'culturekb[harness]'")

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

from culturekb.errors import ConfigError  # noqa: E402
from culturekb.inference.adapters.inspect_ai import STORE_KEY, culturekb_knowledge  # noqa: E402
from culturekb.kb import KnowledgeBase  # noqa: E402

pytestmark = pytest.mark.slow


restore_pil_globals()  # the harness import above changed them

PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
         "AAAABJRU5ErkJggg==")


@pytest.fixture(autouse=True)
def offline_token_count(monkeypatch):
    """mockllm counts tokens with tiktoken, which downloads its o200k_base file on first use; offline, count words."""
    from inspect_ai.model._providers.mockllm import MockLLM

    async def count_text_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    monkeypatch.setattr(MockLLM, "count_text_tokens", count_text_tokens)


@pytest.fixture(scope="module")
def kb_dir(small_kb, tmp_path_factory):
    path = tmp_path_factory.mktemp("inspect_kb") / "kb"
    small_kb.save(path)
    return path


def _dataset():
    return MemoryDataset([
        Sample(id="storm", input="What do people feel about the storm over the sea?", target="fear",
               metadata={"culture": "en"}),
        Sample(id="moon", target="contentment", metadata={"culture": "zh", "concepts": ["bamboo", "full moon"]},
               input=[ChatMessageUser(content=[ContentImage(image=PIXEL),
                                               ContentText(text="How does this painting feel?")])]),
    ])


def _recording_model(seen):
    def respond(input, tools, tool_choice, config):
        seen.append(input)
        return ModelOutput.from_content(model="mockllm/model", content="fear")

    return get_model("mockllm/model", custom_outputs=respond)


def _run(solver, tmp_path, seen):
    task = Task(dataset=_dataset(), solver=solver, scorer=includes())
    [log] = eval(task, model=_recording_model(seen), log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", log.error
    return log


def test_solver_adds_block_before_the_user_prompt(kb_dir, tmp_path):
    seen: list = []
    log = _run([culturekb_knowledge(kb=str(kb_dir), culture_field="culture"), generate()], tmp_path, seen)
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.5)  # answers fear; gold fear, contentment
    by_id = {s.id: s for s in log.samples}
    storm_prompt = by_id["storm"].messages[0].text
    assert storm_prompt.startswith("Notes from the annotations of people of the English-speaking culture")
    assert "- storm: mostly fear" in storm_prompt and storm_prompt.endswith("the storm over the sea?")
    moon = by_id["moon"].messages[0]
    assert isinstance(moon.content[0], ContentImage)  # the image stays where it was
    assert moon.content[1].text.startswith("以下注释来自中华文化背景的人的标注")
    assert moon.content[1].text.endswith("How does this painting feel?")
    record = by_id["moon"].store[STORE_KEY]
    assert record["tuple_ids"] == ["zh::bamboo", "zh::full moon"] and record["kb_version"] == KnowledgeBase.load(
        kb_dir).version
    sent = {m[0].text.splitlines()[-1]: m[0].text for m in seen}  # what the model itself received
    assert "- storm: mostly fear" in sent["What do people feel about the storm over the sea?"]
    assert "满月让人思念远方的亲人" in sent["How does this painting feel?"]


def test_system_placement_generate_flag_and_errors(kb_dir, tmp_path):
    seen: list = []
    solver = culturekb_knowledge(kb=str(kb_dir), placement="system", culture_field=None, culture="en",
                                 concepts_field=None, then_generate=True)
    log = _run(solver, tmp_path, seen)
    assert len(seen) == 2  # the solver called the model itself
    by_id = {s.id: s for s in log.samples}
    storm, moon = by_id["storm"], by_id["moon"]
    assert [m.role for m in storm.messages[:2]] == ["system", "user"]
    assert "- storm: mostly fear" in storm.messages[0].text and not storm.messages[1].text.startswith("Notes")
    # culture en for every sample, concepts from the text: nothing in "How does this painting feel?" is in the KB
    assert moon.messages[0].role == "user" and moon.store[STORE_KEY]["tuple_ids"] == []

    with pytest.raises(ConfigError, match="does not match the KB"):
        culturekb_knowledge(kb=str(kb_dir), kb_version="0000000000000000")
    with pytest.raises(ConfigError, match="placement"):
        # an invalid placement on purpose: the check behind the Literal type must refuse it at run time
        culturekb_knowledge(kb=str(kb_dir), placement="footer")  # type: ignore[arg-type]
    bad = Task(dataset=MemoryDataset([Sample(id="x", input="storm", metadata={"culture": "sw"})]),
               solver=[culturekb_knowledge(kb=str(kb_dir)), generate()], scorer=includes())
    [failed] = eval(bad, model=_recording_model([]), log_dir=str(tmp_path), display="none")
    assert failed.status == "error" and failed.error is not None
    assert "culture 'sw' is not in this KB" in failed.error.message


def test_end_to_end_with_an_openai_compatible_server_writes_the_sidecar(kb_dir, tmp_path, openai_server, monkeypatch):
    """inspect_ai's own OpenAI-compatible provider against the scripted server: the block reaches the server, the
    sidecar beside the log records it, the old spelling kb_dir still works (with a warning)."""
    from culturekb.inference.adapters._sidecar import SIDECAR_NAME, read_sidecar

    server = openai_server(["fear"])
    monkeypatch.setenv("CKBTEST_BASE_URL", server.base_url)
    monkeypatch.setenv("CKBTEST_API_KEY", "test-key")
    with pytest.warns(FutureWarning, match="kb_dir= is deprecated; use kb="):
        solver = culturekb_knowledge(kb_dir=str(kb_dir), prompt_language="en")
    task = Task(dataset=_dataset(), solver=[solver, generate()], scorer=includes())
    [log] = eval(task, model="openai-api/ckbtest/scripted", log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", log.error
    sent = [m["content"] for body in server.requests for m in body["messages"] if m["role"] == "user"]
    texts = [c if isinstance(c, str) else next(p["text"] for p in c if p["type"] == "text") for c in sent]
    assert len(texts) == 2 and all(t.startswith("Notes from the annotations of people of the") for t in texts)
    rows = {r["sample_id"]: r for r in read_sidecar(tmp_path)}
    assert (tmp_path / SIDECAR_NAME).is_file() and set(rows) == {"storm", "moon"}
    moon = rows["moon"]
    assert moon["tuple_ids"] == ["zh::bamboo", "zh::full moon"] and moon["language"] == "en"  # prompt_language
    assert [m["kind"] for m in moon["matches"]] == ["exact", "exact"] and moon["block"] in texts[0] + texts[1]
    assert moon["kb_version"] == KnowledgeBase.load(kb_dir).version and moon["harness"] == "inspect_ai"
