from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest

from culturekb.builders.base import ConceptExtractor
from culturekb.builders.concepts import (
    ClipConceptExtractor,
    PrecomputedConcepts,
    TextConceptExtractor,
    VLMConceptExtractor,
    make_concept_extractor,
)
from culturekb.errors import ConfigError, DataError, ModelOutputError
from culturekb.kb.schema import Sample

# Real ArtEmis rows (painting slug, dominant emotion, joined utterances), copied from the ArtEmis dev subset
# (Achlioptas et al., CVPR 2021; research use).
ARTEMIS = [
    (
        "martin-schongauer_madonna-of-the-rose-bower-1473",
        "contentment",
        "a painting of a woman in a red dress holding a baby Resemblance of beautiful relationship and love of a "
        "mother and son. The backdrop is beautiful since the bright red flowers match the mother's dress",
    ),
    (
        "felicien-rops_human-pardon-1881",
        "fear",
        "The image is of a skeleton posing a a beautiful woman to possibly lure the gentlemen in. Who knows what the "
        "intentions of the skeleton are. Walking in a dark alley and knowing that when someone turns it may not be "
        "what it seems, that is scary. It looks like death itself itself is trying to seduce the man.",
    ),
    (
        "ion-pacea_midnight-sun",
        "awe",
        "The round yellow moon looks like a big wheel of cheese. stylized sunset between two mountains I would "
        "admire the sun as it is perfectly positioned between the mountains. It looks like it's a bright sun "
        "reflecting a rainbow on the ground. The full moon is casting mesmerizing reflections. This painting looks "
        "like a sunset over a mountain",
    ),
    (
        "john-henry-twachtman_venice-1",
        "sadness",
        "The gray sky and the cloudy sky make me feel cold and alone. The water looks dirty and sad, the grime of "
        "the city, no movement, no life",
    ),
]


def _samples() -> list[Sample]:
    return [
        Sample(id=slug, culture="en", title=slug, text=text, label=label, explanations=[text])
        for slug, label, text in ARTEMIS
    ]


# ------------------------------------------------------------------------------------------------ precomputed
def test_precomputed_normalises_and_dedups() -> None:
    s = Sample(id="a", culture="en", concepts=["The Trees", "tree", "Full Moons", "", "the"])
    ex = PrecomputedConcepts()
    assert isinstance(ex, ConceptExtractor)
    assert ex.extract([s]) == [["tree", "full moon"]]


def test_precomputed_missing_concepts() -> None:
    s = Sample(id="no-concepts", culture="en")
    with pytest.raises(DataError, match="no-concepts"):
        PrecomputedConcepts().extract([s])
    assert PrecomputedConcepts(on_missing="empty").extract([s]) == [[]]


def test_precomputed_chinese() -> None:
    s = Sample(id="a", culture="zh", concepts=["满 月", "竹林。"])
    assert PrecomputedConcepts(language="zh").extract([s]) == [["满月", "竹林"]]


# ------------------------------------------------------------------------------------------------------- text
def test_text_extractor_on_artemis_utterances() -> None:
    ex = TextConceptExtractor()
    madonna, skeleton, moon, venice = ex.extract(_samples())
    assert {"madonna", "rose", "red dress", "mother", "baby", "woman"} <= set(madonna)
    assert {"skeleton", "dark alley", "death"} <= set(skeleton)
    assert {"moon", "full moon", "sun", "mountain", "sunset"} <= set(moon)
    assert {"venice", "sky", "cloudy sky", "water"} <= set(venice)
    for concepts in (madonna, skeleton, moon, venice):
        assert len(concepts) <= 12
        assert len(set(concepts)) == len(concepts)


def test_text_extractor_drops_emotion_and_judgement_words() -> None:
    ex = TextConceptExtractor(max_concepts=50)
    banned = {"sad", "happy", "beautiful", "feel", "looks", "scary", "painting", "love", "fear", "calm", "alone"}
    for concepts in ex.extract(_samples()):
        words = {w for c in concepts for w in c.split()}
        assert not words & banned, words & banned


def test_text_extractor_title_slug_and_ranking() -> None:
    ex = TextConceptExtractor(fields=("title",))
    s = Sample(id="t", culture="en", title="ogata-gekko_crane-and-full-moon-1896")
    concepts = ex.extract([s])[0]
    # phrases outrank single words (phrase_weight); "full" alone is a modifier, not a concept;
    # the artist ("ogata gekko") and the year are not concepts
    assert concepts == ["full moon", "crane", "moon"]


def test_text_extractor_phrases_need_a_modifier_or_repetition() -> None:
    ex = TextConceptExtractor(max_concepts=50)
    once = Sample(id="a", culture="en", text="A boat near the harbour wall.")
    twice = Sample(id="b", culture="en", text="A harbour wall. Another harbour wall.")
    assert "harbour wall" not in ex.extract([once])[0]
    assert "harbour wall" in ex.extract([twice])[0]
    colour = Sample(id="c", culture="en", text="She wears red shoes.")
    assert ex.extract([colour])[0] == ["red shoe", "red", "shoe"]


def test_text_extractor_is_deterministic_and_batch_independent() -> None:
    ex = TextConceptExtractor()
    samples = _samples()
    together = ex.extract(samples)
    alone = [ex.extract([s])[0] for s in samples]
    assert together == alone == TextConceptExtractor().extract(samples)


def test_text_extractor_fields_and_language() -> None:
    s = Sample(id="x", culture="en", title="a-b_lighthouse", text="a windmill", explanations=["a tractor"])
    assert TextConceptExtractor(fields=("explanations",)).extract([s]) == [["tractor"]]
    assert TextConceptExtractor(fields=("text",)).extract([s]) == [["windmill"]]
    with pytest.raises(ConfigError, match="unknown fields"):
        TextConceptExtractor(fields=("caption",))
    # every language with word lists is accepted; one without them is an error that names the readable ones
    assert TextConceptExtractor(language="zh").language == "zh"
    with pytest.raises(ConfigError, match="no word lists for language 'xx'.*'zh'"):
        TextConceptExtractor(language="xx")


def test_ids_are_stable_and_parameterised() -> None:
    a, b = TextConceptExtractor(), TextConceptExtractor()
    assert a.id == b.id
    assert TextConceptExtractor(max_concepts=5).id != a.id
    assert PrecomputedConcepts().id != PrecomputedConcepts(language="zh").id


def test_registry() -> None:
    assert isinstance(make_concept_extractor("text", max_concepts=3), TextConceptExtractor)
    assert isinstance(make_concept_extractor("precomputed"), PrecomputedConcepts)
    with pytest.raises(ConfigError, match="unknown concept extractor"):
        make_concept_extractor("ocr")
    with pytest.raises(ConfigError, match="bad arguments"):
        make_concept_extractor("text", colour=True)


# ------------------------------------------------------------------------------------------------------- CLIP
TINY_CFG: dict[str, Any] = {
    "embed_dim": 32,
    "vision_cfg": {"layers": 1, "width": 32, "patch_size": 16, "image_size": 32, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
VOCAB = ["moon", "crane", "pine trees", "river", "red lantern", "mountain", "boat", "bamboo"]


@pytest.fixture(scope="module")
def tiny_clip() -> tuple[Any, Any, Any]:
    open_clip = pytest.importorskip("open_clip")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=TINY_CFG["embed_dim"],
        vision_cfg=open_clip.CLIPVisionCfg(**TINY_CFG["vision_cfg"]),
        text_cfg=open_clip.CLIPTextCfg(**TINY_CFG["text_cfg"]),
    ).eval()
    tokenizer = open_clip.SimpleTokenizer(context_length=16)
    preprocess = open_clip.image_transform(32, is_train=False)
    return model, preprocess, tokenizer


@pytest.fixture(scope="module")
def tiny_config_name(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Registers the tiny architecture with open_clip under a test-only name."""
    open_clip = pytest.importorskip("open_clip")
    cfg_dir = tmp_path_factory.mktemp("open_clip_configs")
    (cfg_dir / "culturekb-tiny-test.json").write_text(json.dumps(TINY_CFG))
    open_clip.add_model_config(cfg_dir)
    return "culturekb-tiny-test"


@pytest.fixture(scope="module")
def image_samples(tmp_path_factory: pytest.TempPathFactory) -> list[Sample]:
    image_mod = pytest.importorskip("PIL.Image")
    folder = tmp_path_factory.mktemp("images")
    out = []
    for i, colour in enumerate([(200, 30, 30), (20, 60, 220), (240, 240, 240)]):
        path = folder / f"img{i}.png"
        image_mod.new("RGB", (48, 40), colour).save(path)
        out.append(Sample(id=f"img{i}", culture="en", image=str(path)))
    return out


def test_clip_returns_vocabulary_items_deterministically(tiny_clip: Any, image_samples: list[Sample]) -> None:
    model, preprocess, tokenizer = tiny_clip
    ex = ClipConceptExtractor(VOCAB, model=model, preprocess=preprocess, tokenizer=tokenizer, top_k=3)
    first = ex.extract(image_samples)
    assert len(first) == 3
    assert all(len(c) == 3 for c in first)
    assert all(set(c) <= set(ex.vocabulary) for c in first)
    assert "pine tree" in ex.vocabulary  # the vocabulary is normalised
    assert ex.extract(image_samples) == first
    again = ClipConceptExtractor(VOCAB, model=model, preprocess=preprocess, tokenizer=tokenizer, top_k=3, batch_size=2)
    assert again.extract(image_samples) == first
    probs = ex.probabilities(image_samples)
    assert probs.shape == (3, len(VOCAB))
    assert abs(float(probs.sum(axis=1).max()) - 1.0) < 1e-4
    top = ClipConceptExtractor(VOCAB, model=model, preprocess=preprocess, tokenizer=tokenizer, top_k=8, min_prob=0.99)
    assert top.extract(image_samples) == [[], [], []]


def test_clip_checkpoint_round_trip(
    tiny_clip: Any, tiny_config_name: str, image_samples: list[Sample], tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    model, preprocess, tokenizer = tiny_clip
    ckpt = tmp_path / "tiny.pt"
    torch.save(model.state_dict(), ckpt)
    loaded = ClipConceptExtractor(VOCAB, model_name=tiny_config_name, checkpoint=ckpt, top_k=3)
    direct = ClipConceptExtractor(VOCAB, model=model, preprocess=preprocess, tokenizer=tokenizer, top_k=3)
    assert loaded.extract(image_samples) == direct.extract(image_samples)
    assert "tiny.pt#" in loaded.id
    assert loaded.id == ClipConceptExtractor(VOCAB, model_name=tiny_config_name, checkpoint=ckpt, top_k=3).id


def test_clip_never_downloads(tiny_config_name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="never downloaded"):
        ClipConceptExtractor(VOCAB)
    with pytest.raises(ConfigError, match="does not exist"):
        ClipConceptExtractor(VOCAB, checkpoint=tmp_path / "missing.pt")
    with pytest.raises(ConfigError, match="preprocess"):
        ClipConceptExtractor(VOCAB, model=object())
    garbage = tmp_path / "garbage.pt"
    garbage.write_text("not a checkpoint")
    ex = ClipConceptExtractor(VOCAB, model_name=tiny_config_name, checkpoint=garbage)  # loaded on first use
    with pytest.raises(ConfigError, match=f"cannot load open_clip model '{tiny_config_name}'"):
        ex.extract([Sample(id="a", culture="en", image=str(garbage))])
    with pytest.raises(ConfigError, match="cannot load open_clip model 'no-such-model'"):
        ClipConceptExtractor(VOCAB, model_name="no-such-model", checkpoint=garbage).extract([])
    with pytest.raises(ConfigError, match="vocabulary is empty"):
        ClipConceptExtractor(["the", ""], model=object(), preprocess=lambda x: x, tokenizer=lambda x: x)


def test_clip_needs_an_image(tiny_clip: Any) -> None:
    model, preprocess, tokenizer = tiny_clip
    ex = ClipConceptExtractor(VOCAB, model=model, preprocess=preprocess, tokenizer=tokenizer)
    with pytest.raises(DataError, match="no image"):
        ex.extract([Sample(id="blank", culture="en")])
    with pytest.raises(DataError, match="does not exist"):
        ex.extract([Sample(id="gone", culture="en", image="/nonexistent/x.png")])


# -------------------------------------------------------------------------------------------------------- VLM
def _image_of(request: dict[str, Any]) -> str:
    parts = request["messages"][-1]["content"]
    if isinstance(parts, str):
        return ""
    return next(p["image_url"]["url"] for p in parts if p.get("type") == "image_url")


def test_vlm_extractor_over_scripted_server(openai_server: Any, image_samples: list[Sample]) -> None:
    from culturekb.models.chat import OpenAICompatClient

    def responder(body: dict[str, Any]) -> str:
        url = _image_of(body)
        return '["The Full Moons", "crane", "sad"]' if url else "[]"

    with openai_server(responder) as server:
        client = OpenAICompatClient("vlm-test", base_url=server.base_url)
        ex = VLMConceptExtractor(client, max_concepts=2)
        out = ex.extract(image_samples[:2])
        assert out == [["full moon", "crane"], ["full moon", "crane"]]
        assert server.calls == 2
        body = server.requests[0]
        url = _image_of(body)
        assert url.startswith("data:image/jpeg;base64,")
        text = body["messages"][-1]["content"][0]["text"]
        assert "at most 2 concepts" in text
        assert "{max_concepts}" not in text


def test_vlm_extractor_resizes_large_images(openai_server: Any, tmp_path: Path) -> None:
    image_mod = pytest.importorskip("PIL.Image")
    from culturekb.models.chat import OpenAICompatClient

    path = tmp_path / "big.png"
    image_mod.new("RGB", (2000, 1000), (10, 200, 10)).save(path)
    with openai_server(['["meadow"]']) as server:
        client = OpenAICompatClient("vlm-test", base_url=server.base_url)
        assert VLMConceptExtractor(client).extract([Sample(id="big", culture="en", image=str(path))]) == [["meadow"]]
        url = _image_of(server.requests[0])
    data = base64.b64decode(url.split(",", 1)[1])
    with image_mod.open(io.BytesIO(data)) as img:
        assert max(img.size) == 768


def test_vlm_extractor_retries_a_malformed_answer(openai_server: Any, image_samples: list[Sample]) -> None:
    from culturekb.models.chat import OpenAICompatClient

    with openai_server(["Sure! Here are the concepts: moon, crane", '["pine trees", "river"]']) as server:
        client = OpenAICompatClient("vlm-test", base_url=server.base_url)
        assert VLMConceptExtractor(client).extract(image_samples[:1]) == [["pine tree", "river"]]
        assert server.calls == 2


def test_vlm_extractor_gives_up_after_retries(openai_server: Any, image_samples: list[Sample]) -> None:
    from culturekb.models.chat import OpenAICompatClient

    with openai_server(["not json at all"]) as server:
        client = OpenAICompatClient("vlm-test", base_url=server.base_url)
        with pytest.raises(ModelOutputError):
            VLMConceptExtractor(client, retries=1).extract(image_samples[:1])
        assert server.calls == 2


def test_vlm_extractor_needs_an_image() -> None:
    class NoClient:
        id = "none"

    ex = VLMConceptExtractor(NoClient())  # type: ignore[arg-type]
    with pytest.raises(DataError, match="no image"):
        ex.extract([Sample(id="text-only", culture="en", text="a moon")])
    assert ex.id.startswith("vlm:none:concept_extraction.en@")
