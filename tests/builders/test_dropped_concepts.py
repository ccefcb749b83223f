"""The build report lists the concept candidates the text extractor dropped, per culture and reason, in JSON and
Markdown; the KB holds none of them."""

from __future__ import annotations

import json
from typing import Any

from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb, make_components
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.kb import Sample, get_scheme
from culturekb.text.concepts import BUILD_FIELDS, TextConceptExtractor

SCHEME = get_scheme("artemis9")


def _samples() -> list[Sample]:
    texts = [
        ("awe", "Van Gogh's sunflowers in a vase; I love this painting, no matter what."),
        ("awe", "The sunflowers by van Gogh stand in a vase on the left of the picture."),
        ("sadness", "A sad old man walks by the river; the image makes me feel sad."),
        ("sadness", "The old man at the river looks sad, which answer would you choose?"),
    ]
    return [Sample(id=f"s{i}", culture="en", label=label, split="train", explanations=[text],
                   title="sunflowers" if label == "awe" else "old man by the river")
            for i, (label, text) in enumerate(texts)]


def test_the_build_report_lists_what_was_dropped_and_why(default_embedder: Any, tmp_path: Any) -> None:
    components = BuildComponents(
        extractor=TextConceptExtractor(fields=BUILD_FIELDS, scheme=SCHEME),
        generator=ExtractiveRationaleGenerator(default_embedder),
        judges=[LexiconJudge(SCHEME), PrototypeJudge(default_embedder, SCHEME)],
    )
    out = tmp_path / "kb"
    res = build_kb(_samples(), BuildConfig(), out=out, cache_dir=tmp_path / "cache", components=components,
                   progress=False)
    concepts = {t.concept for t in res.kb.tuples}
    assert {"sunflower", "vase", "old man", "river"} <= concepts
    assert not concepts & {"van", "gogh", "painting", "picture", "image", "sad", "left", "matter", "answer"}

    dropped = res.report["dropped_concepts"]
    en = dropped["per_culture"]["en"]
    top = {reason: dict((w, n) for w, n in row["top"]) for reason, row in en.items()}
    assert top["name"] == {"gogh": 2, "van": 2}
    assert {"painting", "picture", "image", "answer", "choose"} <= set(top["instruction"])
    assert top["emotion"]["sad"] == 2 and "love" in top["emotion"]
    assert {"no matter", "left"} <= set(top["function"])
    assert en["name"]["count"] == 4 and en["name"]["distinct"] == 2
    assert set(dropped["reasons"]) >= {"instruction", "function", "emotion", "name", "fragment"}

    saved = json.loads((out / "build_report.json").read_text())
    assert saved["dropped_concepts"] == json.loads(json.dumps(dropped))
    md = (out / "build_report.md").read_text()
    assert "## Dropped concept candidates" in md and "| en | name | 4 | 2 | gogh (2), van (2) |" in md

    # a rebuild reads the drops back from the step cache
    again = build_kb(_samples(), BuildConfig(), cache_dir=tmp_path / "cache", components=components, progress=False)
    assert again.report["steps"]["concepts"]["computed"] == 0
    assert again.report["dropped_concepts"] == dropped


def test_the_configured_text_extractor_knows_the_build_scheme() -> None:
    extractor = make_components(BuildConfig(scheme="cedar14", judges=["lexicon", "lexicon"])).extractor
    assert isinstance(extractor, TextConceptExtractor)
    assert extractor.scheme is not None and extractor.scheme.name == "cedar14"
    assert extractor.fields == BUILD_FIELDS
