from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from culturekb.builders.base import RationaleGenerator, RationaleRequest
from culturekb.builders.rationales import (
    ExtractiveRationaleGenerator,
    LLMRationaleGenerator,
    format_distribution,
    split_sentences,
)
from culturekb.errors import ConfigError, ModelOutputError
from culturekb.kb.schemes import get_scheme


class CountingEmbedder:
    """Wraps an embedder and records every encode call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.encode(texts, batch_size=batch_size)


class TableEmbedder:
    """Deterministic vectors: given ones for known texts, a hash-seeded random unit vector otherwise."""

    id = "table"
    dim = 8

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table = table or {}

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        rows = []
        for t in texts:
            if t in self.table:
                v = np.asarray(self.table[t], dtype=np.float32)
            else:
                seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
                v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


# Real-style explanations (ArtEmis-like, written for this test) for the concept "skeleton", label fear.
SKELETON_EVIDENCE = (
    "The skeleton looks like death coming to take the man away, which frightens me. Scary.",
    "A skeleton reaching for the woman makes me afraid of what happens next.",
    "The skeleton reaching for the woman makes me afraid of what happens next!",  # exact duplicate up to case/punct
    "Death in the form of a skeleton is a frightening reminder that we all die.",
    "The frame is gilded and the canvas was restored in the nineteenth century by a museum in Brussels.",
    "Too dark.",
)


def _req(concept: str, evidence: tuple[str, ...], label: str = "fear", culture: str = "en") -> RationaleRequest:
    return RationaleRequest(
        concept=concept, culture=culture, label=label, distribution={label: 0.6, "sadness": 0.4}, support=5,
        evidence=evidence,
    )


# ------------------------------------------------------------------------------------------------- extractive
def test_split_sentences() -> None:
    text = "A dark sky. A lone tree! Why?\nNew line"
    assert split_sentences(text) == ["A dark sky.", "A lone tree!", "Why?", "New line"]
    assert split_sentences("白鹤象征长寿。月亮让人思念家乡！") == ["白鹤象征长寿。", "月亮让人思念家乡！"]
    long = "first part, second part; third part"
    assert split_sentences(long, max_chars=20) == ["first part,", "second part;", "third part"]


def test_extractive_filters_dedups_and_ranks(default_embedder: Any) -> None:
    gen = ExtractiveRationaleGenerator(default_embedder, max_rationales=3)
    assert isinstance(gen, RationaleGenerator)
    (out,) = gen.generate([_req("skeleton", SKELETON_EVIDENCE)])
    assert 1 <= len(out) <= 3
    assert "Too dark." not in out and "Scary." not in out  # shorter than min_chars
    keys = [" ".join(o.lower().strip(".!").split()) for o in out]
    assert len(set(keys)) == len(keys)
    assert sum("reaching for the woman" in o for o in out) == 1  # the exact duplicate is gone
    assert not any("gilded" in o for o in out)  # the off-topic sentence is the least central
    cands = gen.candidates(_req("skeleton", SKELETON_EVIDENCE))
    assert any("gilded" in c for c in cands)
    assert gen.generate([_req("skeleton", SKELETON_EVIDENCE)]) == [out]  # deterministic


def test_extractive_near_duplicates_and_centrality() -> None:
    table: dict[str, list[float]] = {
        "Central sentence about the moon.": [1, 0.2, 0, 0, 0, 0, 0, 0],
        "Almost the same moon sentence.": [1, 0.25, 0, 0, 0, 0, 0, 0],
        "Another view of the moon at night.": [0.8, 0.6, 0.0, 0, 0, 0, 0, 0],
        "Completely unrelated statement here.": [0, 0, 0, 1, 0, 0, 0, 0],
    }
    gen = ExtractiveRationaleGenerator(TableEmbedder(table), max_rationales=4, dedup_threshold=0.99, concept_bonus=0,
                                       on_topic=False)  # the topic check would drop the outlier (test_rationale_topic)
    (out,) = gen.generate([_req("moon", tuple(table))])
    # the most central sentence first; its near-duplicate (cosine 0.999) dropped; the outlier last
    assert out == [
        "Almost the same moon sentence.",
        "Another view of the moon at night.",
        "Completely unrelated statement here.",
    ]
    strict = ExtractiveRationaleGenerator(TableEmbedder(table), max_rationales=4, dedup_threshold=1.0, concept_bonus=0,
                                          on_topic=False)
    assert len(strict.generate([_req("moon", tuple(table))])[0]) == 4


def test_extractive_concept_bonus() -> None:
    same: list[float] = [1, 0, 0, 0, 0, 0, 0, 0]
    table = {"A sentence without the word.": same, "A sentence naming the crane.": same}
    gen = ExtractiveRationaleGenerator(TableEmbedder(table), max_rationales=1, dedup_threshold=1.0)
    assert gen.generate([_req("crane", tuple(table))]) == [["A sentence naming the crane."]]


def test_extractive_batches_all_requests_in_one_encode_call(default_embedder: Any) -> None:
    emb = CountingEmbedder(default_embedder)
    gen = ExtractiveRationaleGenerator(emb, max_rationales=2)
    requests = [
        _req("skeleton", SKELETON_EVIDENCE),
        _req("moon", ("The full moon over the quiet lake feels calm and restful.",), label="contentment"),
        _req("nothing", ()),
        _req("白鹤", ("白鹤在中国象征长寿和吉祥，让人感到平静。",), label="contentment", culture="zh"),
    ]
    out = gen.generate(requests)
    assert len(emb.calls) == 1
    # the candidates and, for the topic check, the concepts (tests/builders/test_rationale_topic.py)
    assert len(emb.calls[0]) == sum(len(gen.candidates(r)) for r in requests) + len(requests)
    assert len(out) == 4 and out[2] == []
    assert out[1] == ["The full moon over the quiet lake feels calm and restful."]
    assert out[3] == ["白鹤在中国象征长寿和吉祥，让人感到平静。"]  # 21 CJK characters count as 42


def test_extractive_no_evidence_makes_no_call() -> None:
    emb = CountingEmbedder(TableEmbedder())
    assert ExtractiveRationaleGenerator(emb).generate([_req("x", ()), _req("y", ("short",))]) == [[], []]
    assert emb.calls == []


def test_extractive_config_errors_and_id(default_embedder: Any) -> None:
    with pytest.raises(ConfigError):
        ExtractiveRationaleGenerator(default_embedder, max_rationales=0)
    with pytest.raises(ConfigError):
        ExtractiveRationaleGenerator(default_embedder, min_chars=300, max_chars=240)
    a = ExtractiveRationaleGenerator(default_embedder)
    assert a.id == ExtractiveRationaleGenerator(default_embedder).id
    assert a.id != ExtractiveRationaleGenerator(default_embedder, max_rationales=2).id
    assert default_embedder.id in a.id


# -------------------------------------------------------------------------------------------------------- LLM
def _prompt(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_format_distribution() -> None:
    scheme = get_scheme("artemis9")
    text = format_distribution({"fear": 0.25, "sadness": 0.6, "awe": 0.15, "anger": 0.0}, scheme)
    assert text == "sadness 60%, fear 25%, awe 15%"
    assert format_distribution({"fear": 0.5, "awe": 0.5}, scheme) == "awe 50%, fear 50%"  # ties in scheme order
    assert format_distribution({"sadness": 1.0}, scheme, "zh") == "悲伤 100%"


def test_llm_rationales_valid_batch(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    def responder(body: dict[str, Any]) -> str:
        prompt = _prompt(body)
        concept = prompt.split('show the concept "', 1)[1].split('"', 1)[0]
        return json.dumps([f"In this culture the {concept} recalls parting.", f"The {concept} is a sign of loss."])

    with openai_server(responder) as server:
        client = OpenAICompatClient("writer", base_url=server.base_url)
        gen = LLMRationaleGenerator(client, "artemis9", max_rationales=3)
        assert isinstance(gen, RationaleGenerator)
        requests = [
            RationaleRequest("willow", "zh", "sadness", {"sadness": 0.6, "fear": 0.25, "awe": 0.15}, 20),
            RationaleRequest("moon", "en", "contentment", {"contentment": 1.0}, 4),
            RationaleRequest("crane", "ar", "awe", {"awe": 0.5, "fear": 0.5}, 2),
        ]
        out = gen.generate(requests)
        assert out[0] == ["In this culture the willow recalls parting.", "The willow is a sign of loss."]
        assert out[2] is not None and out[2][1] == "The crane is a sign of loss."
        assert server.calls == 3
        prompts = sorted(_prompt(b) for b in server.requests)
    willow = next(p for p in prompts if '"willow"' in p)
    assert "Chinese" in willow and "sadness 60%, fear 25%, awe 15%" in willow
    assert 'The most common emotion was\n"sadness"' in willow
    assert "up to 3 short rationales" in willow
    assert "{" not in willow.split("Answer with")[0]
    assert gen.id.startswith("llm-rationales:openai:writer:rationale_generation.en@")


def test_llm_rationales_malformed_then_valid(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    replies = ["Here you go: rationale one", '["one", "two", "three", "four", "five"]', '```json\n["ok one"]\n```']
    with openai_server(replies) as server:
        client = OpenAICompatClient("writer", base_url=server.base_url)
        gen = LLMRationaleGenerator(client, "artemis9", max_rationales=4)
        out = gen.generate([RationaleRequest("moon", "en", "awe", {"awe": 1.0}, 3)])
        assert out == [["ok one"]]
        assert server.calls == 3
        last = server.requests[-1]["messages"]
        assert last[-2] == {"role": "assistant", "content": replies[1]}  # the model sees its bad answer
        assert "1 to 4" in last[-1]["content"]


def test_llm_rationales_always_malformed(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    with openai_server(['{"rationale": 42}']) as server:
        client = OpenAICompatClient("writer", base_url=server.base_url)
        gen = LLMRationaleGenerator(client, "artemis9", retries=2)
        with pytest.raises(ModelOutputError, match="writer"):
            gen.generate([RationaleRequest("moon", "en", "awe", {"awe": 1.0}, 3)])
        assert server.calls == 3


def test_llm_rationales_rejects_long_and_empty_items(openai_server: Any) -> None:
    from culturekb.models.chat import OpenAICompatClient

    with openai_server([json.dumps(["x" * 301]), json.dumps(["", "fine"]), json.dumps(["  fine  ", "fine"])]) as server:
        client = OpenAICompatClient("writer", base_url=server.base_url)
        out = LLMRationaleGenerator(client, "artemis9").generate([RationaleRequest("m", "en", "awe", {"awe": 1.0}, 1)])
        assert out == [["fine"]]
        assert server.calls == 3


def test_llm_rationales_prompt_override(tmp_path: Any) -> None:
    class NoClient:
        id = "none"

    good = tmp_path / "mine.txt"
    good.write_text("Concept {concept} in {culture}: {distribution}; why {dominant_emotion}? JSON list.")
    gen = LLMRationaleGenerator(NoClient(), "artemis9", prompt=good)  # type: ignore[arg-type]
    msg = gen.messages(RationaleRequest("moon", "zh", "awe", {"awe": 1.0}, 1))
    assert msg[0]["content"].startswith("Concept moon in Chinese: awe 100%; why awe?")
    bad = tmp_path / "bad.txt"
    bad.write_text("Concept {concept} {colour}")
    with pytest.raises(ConfigError, match="colour"):
        LLMRationaleGenerator(NoClient(), "artemis9", prompt=bad)  # type: ignore[arg-type]
