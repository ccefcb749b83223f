"""A concept in any language finds the KB's concepts across languages through the multilingual `use` embedder:
a KB built from English narratives of the zh culture, indexed with `culturekb index --embedder use`, answers a
Chinese, Spanish or Arabic text stimulus with its English tuples (and never with a wrong one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.cli import app
from culturekb.inference.augmenter import Augmenter
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import get_scheme
from culturekb.retrieval.retriever import DEFAULT_TAU, open_retriever
from culturekb.text.concepts import TextConceptExtractor

NARRATIVES = [
    ("The family watched the moon rise over the river.", "contentment"),
    ("Under the moon, a paper lantern glowed by the river.", "contentment"),
    ("A red dragon danced through the street at the festival.", "excitement"),
    ("The dragon parade filled the street with drums.", "excitement"),
    ("The sun set behind the old temple.", "awe"),
    ("Monks walked around the temple at sunrise, the sun on their robes.", "awe"),
]


@pytest.fixture(scope="module")
def use_embedder() -> Any:
    from culturekb.models.factory import make_embedder

    return make_embedder("use")


@pytest.fixture(scope="module")
def use_kb(tmp_path_factory: pytest.TempPathFactory, use_embedder: Any) -> Path:
    samples = [Sample(id=f"n{i}", culture="zh", text=text, label=label, split="train")
               for i, (text, label) in enumerate(NARRATIVES * 2)]
    scheme = get_scheme("artemis9")
    components = BuildComponents(TextConceptExtractor(), ExtractiveRationaleGenerator(use_embedder),
                                 [LexiconJudge(scheme), PrototypeJudge(use_embedder, scheme)])
    out = tmp_path_factory.mktemp("xling") / "kb"
    build_kb(samples, BuildConfig(embedder="use"), out=out, components=components, progress=False)
    res = CliRunner().invoke(app, ["index", "--kb", str(out), "--embedder", "use", "--backend", "numpy"])
    assert res.exit_code == 0, res.output
    assert "use" in res.output
    return out


def test_chinese_moon_finds_the_english_moon(use_kb: Path) -> None:
    retriever = open_retriever(use_kb)  # the embedder the index records
    assert retriever.embedder.id.startswith("use") and retriever.tau == DEFAULT_TAU
    concepts = {t.concept for t in retriever.kb.for_culture("zh")}
    assert {"moon", "river", "dragon", "temple", "sun"} <= concepts
    [moon, dragon, sun] = retriever.lookup(["月亮", "龙", "太阳"], "zh")
    assert moon is not None and moon.concept == "moon" and moon.kind == "semantic" and moon.score >= DEFAULT_TAU
    assert dragon is not None and dragon.concept == "dragon"
    assert sun is not None and sun.concept == "sun"  # the sun, not the moon


def test_a_text_stimulus_in_any_language_retrieves_knowledge(use_kb: Path) -> None:
    augmenter = Augmenter(open_retriever(use_kb))
    stimuli = {
        "zh": "中秋节的晚上，我们一家人看着天上的月亮。",
        "es": "Por la noche miramos la luna sobre el río.",
        "ar": "في الليل نظرنا إلى القمر فوق النهر.",
    }
    for lang, text in stimuli.items():
        block = augmenter.augment(Sample(id=lang, culture="zh", text=text))
        assert "zh::moon" in block.tuple_ids, (lang, block.concepts, block.tuple_ids)
        assert block.knowledge.status == "matched"
    # an unrelated stimulus finds nothing rather than a wrong tuple
    nothing = augmenter.augment(Sample(id="x", culture="zh", text="计算机键盘和鼠标放在桌子上。"))
    assert not nothing.tuple_ids, nothing.tuple_ids
