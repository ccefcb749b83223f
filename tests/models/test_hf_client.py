"""The local transformers client, run for real on tiny random-weight models built and saved in code."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from culturekb.errors import ConfigError, DataError, MissingExtraError
from culturekb.inference.messages import build_messages
from culturekb.models import ModelClient, ResponseCache, make_client

pytestmark = pytest.mark.slow

WORDS = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "user", "assistant", "system", ":", "the", "emotion", "is",
         "sadness", "awe", "fear", "which", "answer", "{", "}", '"']
IMAGE_TOKENS = 4  # (28 px / 14 px patches) ** 2
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : "
    "{% if m['content'] is string %}{{ m['content'] }} "
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image> "
    "{% elif c['type'] == 'text' %}{{ c['text'] }} {% endif %}{% endfor %}{% endif %}</s> {% endfor %}"
    "{% if add_generation_prompt %}assistant : {% endif %}"
)


def _tokenizer(chat_template: str | None) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        chat_template=chat_template, extra_special_tokens={"image_token": "<image>"},
    )


def _text_config() -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=256, pad_token_id=0, bos_token_id=2, eos_token_id=3,
    )


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny LLaVA (CLIP vision tower + Llama text model, random weights) with its processor, saved to disk."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    folder = tmp_path_factory.mktemp("tiny-llava")
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}),
        tokenizer=_tokenizer(None),
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, image_size=28, patch_size=14, projection_dim=16),
        text_config=_text_config(),
        image_token_index=WORDS.index("<image>"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LlavaForConditionalGeneration(config)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny text-only Llama causal LM with a tokenizer and a chat template, saved to disk."""
    import torch
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LlamaForCausalLM(_text_config())
    model.save_pretrained(folder)
    _tokenizer(
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
        "{% if add_generation_prompt %}assistant : {% endif %}"
    ).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def client(tiny_vlm: Path) -> Any:
    from culturekb.models.hf_client import HFVLMClient

    return HFVLMClient(tiny_vlm, max_new_tokens=5)


@pytest.fixture
def image_file(tmp_path: Path) -> str:
    path = tmp_path / "painting.png"
    Image.new("RGB", (300, 200), (20, 160, 40)).save(path)
    return str(path)


def test_generate_end_to_end_with_an_image(client: Any, image_file: str, tiny_vlm: Path) -> None:
    assert isinstance(client, ModelClient)
    assert client.id == f"hf:{tiny_vlm}"
    with_image = client.complete(build_messages("which emotion is the answer", image_file))
    text_only = client.complete([{"role": "user", "content": "which emotion is the answer"}])
    assert isinstance(with_image.text, str) and with_image.model == client.id and not with_image.cached
    assert 1 <= with_image.usage["completion_tokens"] <= 5
    # the image reached the model: the processor expanded it into the vision tower's tokens
    assert with_image.usage["prompt_tokens"] == text_only.usage["prompt_tokens"] + IMAGE_TOKENS


def test_greedy_is_deterministic_and_max_tokens_is_respected(client: Any, image_file: str) -> None:
    messages = build_messages("the emotion is", image_file)
    first = client.complete(messages)
    assert client.complete(messages, temperature=0).text == first.text
    short = client.complete(messages, max_tokens=2)
    assert short.usage["completion_tokens"] <= 2
    assert first.text.startswith(short.text)


def test_complete_many_batches_and_keeps_input_order(client: Any, image_file: str) -> None:
    with_image = build_messages("the emotion is", image_file)
    plain = [{"role": "user", "content": "which answer"}]
    batch = [with_image, plain, with_image, build_messages("which emotion is awe", image_file)]
    singles = [client.complete(m) for m in batch]
    many = client.complete_many(batch)
    assert len(many) == 4
    assert many[0].text == many[2].text
    assert [r.usage["prompt_tokens"] for r in many] == [r.usage["prompt_tokens"] for r in singles]
    assert many[1].text == singles[1].text  # alone in its group: no padding, same greedy answer
    assert client.complete_many([]) == []


def test_acomplete_runs_in_a_thread(client: Any) -> None:
    async def run() -> list[str]:
        answers = await asyncio.gather(*(client.acomplete([{"role": "user", "content": "awe"}]) for _ in range(2)))
        return [a.text for a in answers]

    first, second = asyncio.run(run())
    assert first == second


def test_messages_with_images_are_converted_to_the_processor_format(image_file: str) -> None:
    from culturekb.models.hf_client import to_hf_conversation

    messages = [{"role": "system", "content": "You judge art."}, *build_messages("Which emotion?", image_file)]
    conversation, images = to_hf_conversation(messages, max_image_side=64)
    assert conversation == [
        {"role": "system", "content": [{"type": "text", "text": "You judge art."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which emotion?"}]},
    ]
    assert len(images) == 1 and images[0].mode == "RGB" and images[0].size == (64, 43)
    local = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_file}}]}]
    assert to_hf_conversation(local)[1][0].size == (300, 200)
    text_only, none = to_hf_conversation([{"role": "user", "content": [{"type": "text", "text": "a"}]}],
                                         text_only=True)
    assert text_only == [{"role": "user", "content": "a"}] and none == []


def test_bad_messages_are_clear_errors() -> None:
    from culturekb.models.hf_client import to_hf_conversation

    remote = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x.org/a.jpg"}}]}]
    with pytest.raises(DataError, match="remote URL.*does not download"):
        to_hf_conversation(remote)
    with pytest.raises(DataError, match="does not exist"):
        to_hf_conversation([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "/no.png"}}]}])
    with pytest.raises(ConfigError, match="unsupported content part"):
        to_hf_conversation([{"role": "user", "content": [{"type": "audio", "audio": "x"}]}])
    with pytest.raises(ConfigError, match="non-empty list"):
        to_hf_conversation([])
    with pytest.raises(ConfigError, match="no image processor"):
        to_hf_conversation(remote, text_only=True)


def test_parameters(client: Any) -> None:
    messages = [{"role": "user", "content": "awe"}]
    assert isinstance(client.complete(messages, response_format={"type": "json_object"}, seed=3).text, str)
    sampled = client.complete(messages, temperature=0.7, top_p=0.9, seed=1, max_tokens=3)
    assert sampled.usage["completion_tokens"] <= 3
    with pytest.raises(ConfigError, match="unsupported parameters \\['beam_width'\\]"):
        client.complete(messages, beam_width=4)
    with pytest.raises(ConfigError, match="stream=True"):
        client.complete(messages, stream=True)
    with pytest.raises(ConfigError, match="n=2"):
        client.complete(messages, n=2)


def test_stop_sequences_cut_the_answer(client: Any) -> None:
    messages = [{"role": "user", "content": "the emotion"}]
    full = client.complete(messages).text
    assert len(full) >= 4
    stop = full[2:4]
    assert client.complete(messages, stop=[stop]).text == full[: full.index(stop)].rstrip()
    assert client.complete(messages, stop="zzz-not-there").text == full


def test_response_cache_serves_repeats(client: Any, tiny_vlm: Path, tmp_path: Path) -> None:
    from culturekb.models.hf_client import HFVLMClient

    cached = HFVLMClient(tiny_vlm, model=client.model, processor=client.processor,
                         cache=ResponseCache(tmp_path / "cache.sqlite"))
    messages = [{"role": "user", "content": "which emotion"}]
    first = cached.complete(messages)
    second = cached.complete(messages)
    assert not first.cached and second.cached and second.text == first.text
    assert (cached.calls, cached.cache_hits) == (1, 1)


def test_make_client_builds_hf_clients(tiny_vlm: Path) -> None:
    import culturekb.models.hf_client  # noqa: F401 - registers the "hf" backend

    made = make_client(f"hf:{tiny_vlm}", max_new_tokens=3, max_concurrency=8, timeout_s=30.0)
    assert made.id == f"hf:{tiny_vlm}"
    assert made.complete([{"role": "user", "content": "awe"}]).usage["completion_tokens"] <= 3
    with pytest.raises(ConfigError, match="hf:PATH"):
        make_client("hf:")
    with pytest.raises(ConfigError, match="takes no base_url"):
        make_client(f"hf:{tiny_vlm}", base_url="http://localhost:8000/v1")


def test_missing_or_wrong_paths_are_config_errors(tmp_path: Path) -> None:
    from culturekb.models.hf_client import HFVLMClient

    with pytest.raises(ConfigError, match=r"does not exist.*never downloads"):
        HFVLMClient(tmp_path / "no-such-model")
    with pytest.raises(ConfigError, match="no config.json"):
        HFVLMClient(tmp_path)
    with pytest.raises(ConfigError, match="max_new_tokens"):
        HFVLMClient(tmp_path, max_new_tokens=0)
    with pytest.raises(ConfigError, match="both model and processor"):
        HFVLMClient(tmp_path, model=object())
    from culturekb.models.hf_client import _resolve_dtype

    with pytest.raises(ConfigError, match="not a torch dtype"):
        _resolve_dtype("float99", "cpu")


def test_hub_ids_are_never_downloaded(tmp_path: Path) -> None:
    from culturekb.models.hf_client import HFVLMClient

    with pytest.raises(ConfigError, match="does not exist"):
        HFVLMClient("HuggingFaceTB/SmolVLM-256M-Instruct")


def test_text_only_checkpoint_falls_back_to_a_causal_lm(tiny_lm: Path, image_file: str) -> None:
    from culturekb.models.hf_client import HFVLMClient

    lm = HFVLMClient(tiny_lm, max_new_tokens=3)
    assert lm.text_only
    answer = lm.complete([{"role": "user", "content": [{"type": "text", "text": "the emotion is"}]}])
    assert isinstance(answer.text, str) and answer.usage["completion_tokens"] <= 3
    with pytest.raises(ConfigError, match="no image processor"):
        lm.complete(build_messages("the emotion is", image_file))


def test_checkpoint_without_chat_template_is_rejected(tiny_lm: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "no-template"
    shutil.copytree(tiny_lm, folder)
    _tokenizer(None).save_pretrained(folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    from culturekb.models.hf_client import HFVLMClient

    with pytest.raises(ConfigError, match="no chat template"):
        HFVLMClient(folder)


def test_missing_transformers_raises_missing_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from culturekb.models.hf_client import HFVLMClient

    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'culturekb\[vision\]'"):
        HFVLMClient(tmp_path)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError, match="torch"):
        HFVLMClient(tmp_path, device="auto")


@pytest.mark.gpu
def test_runs_on_cuda_in_bfloat16(tiny_vlm: Path, image_file: str) -> None:
    import torch

    from culturekb.models.hf_client import HFVLMClient

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpu = HFVLMClient(tiny_vlm, device="auto", dtype="bfloat16", max_new_tokens=4)
    assert gpu.device == "cuda" and gpu.model.dtype == torch.bfloat16
    answers = gpu.complete_many([build_messages("the emotion is", image_file)] * 3)
    assert len({a.text for a in answers}) == 1 and answers[0].usage["completion_tokens"] <= 4
    gpu.close()


def test_closed_client_says_so(client: Any, tiny_vlm: Path) -> None:
    from culturekb.models.hf_client import HFVLMClient

    other = HFVLMClient(tiny_vlm, model=client.model, processor=client.processor)
    other.close()
    with pytest.raises(ConfigError, match="closed"):
        other.complete([{"role": "user", "content": "awe"}])


def test_return_exceptions_keeps_failures_in_place(client: Any, image_file: str, tmp_path: Path) -> None:
    good = build_messages("the emotion is", image_file)
    broken = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": str(tmp_path / "gone.png")}},
                                           {"type": "text", "text": "the emotion is"}]}]
    with pytest.raises(DataError, match="gone.png"):
        client.complete_many([good, broken])
    answers = client.complete_many([good, broken, good], return_exceptions=True)
    assert isinstance(answers[1], DataError) and "gone.png" in str(answers[1])
    assert answers[0].text == answers[2].text == client.complete(good).text
    with pytest.raises(ConfigError, match="unsupported parameters"):  # bad parameters still raise
        client.complete_many([good], return_exceptions=True, beam_width=2)


def test_a_failing_generation_is_isolated_to_its_item(client: Any, image_file: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from culturekb.errors import ProviderError

    good = [{"role": "user", "content": "which emotion"}]
    bad = [{"role": "user", "content": "which answer"}]
    real = client.provider._run_batch

    def flaky(prepared: list[Any], gen_kw: dict[str, Any], stops: list[str]) -> list[Any]:
        if any("answer" in text for text, _ in prepared):
            raise ProviderError("out of memory (simulated)")
        return real(prepared, gen_kw, stops)

    monkeypatch.setattr(client.provider, "_run_batch", flaky)
    before = client.fault_counts()
    answers = client.complete_many([good, bad, good], return_exceptions=True)
    assert isinstance(answers[1], ProviderError)
    assert answers[0].text == answers[2].text
    counts = client.fault_counts()  # the wrapper counts a local model's failures as it counts a server's
    assert counts["failures"] - before["failures"] == 1 and counts["answers"] - before["answers"] == 2
    with pytest.raises(ProviderError, match="simulated"):
        client.complete_many([good, bad])
