from __future__ import annotations

from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.text.prompts import available_prompt_languages, load_prompt


@pytest.mark.parametrize(
    ("name", "placeholders"),
    [
        ("concept_extraction", {"max_concepts"}),
        ("rationale_generation", {"concept", "culture", "distribution", "dominant_emotion", "max_rationales"}),
        ("judge", {"concept", "culture", "rationales", "labels"}),
    ],
)
def test_packaged_prompts_load_with_their_placeholders(name: str, placeholders: set[str]) -> None:
    tpl = load_prompt(name, "en")
    assert tpl.placeholders == placeholders
    assert tpl.id.startswith(f"{name}.en@") and len(tpl.sha) == 64
    assert "en" in available_prompt_languages(name)
    rendered = tpl.render(**dict.fromkeys(placeholders, "X"))
    if name == "judge":
        assert '{"emotion": "<one emotion' in rendered  # a literal JSON example, written {{ }} in the file
    else:
        assert "{" not in rendered


def test_render_rejects_missing_and_extra_values() -> None:
    tpl = load_prompt("concept_extraction", "en")
    with pytest.raises(ConfigError, match=r"missing values for \['max_concepts'\]"):
        tpl.render()
    with pytest.raises(ConfigError, match=r"values \['colour'\] have no placeholder"):
        tpl.render(max_concepts=3, colour="red")
    assert "at most 3 concepts" in tpl.fill({"max_concepts": 3, "unused": 1})


def test_unknown_name_or_language() -> None:
    with pytest.raises(ConfigError, match="packaged languages for 'judge'"):
        load_prompt("judge", "xx")
    with pytest.raises(ConfigError, match="no packaged prompt named 'nothing'"):
        load_prompt("nothing", "en")
    with pytest.raises(ConfigError, match="does not exist"):
        load_prompt("/no/such/template.txt")


def test_user_template_validation(tmp_path: Path) -> None:
    ok = tmp_path / "mine.txt"
    ok.write_text('Concept {concept}; literal {{"json": 1}}')
    tpl = load_prompt(ok, required=("concept",), allowed=("culture",))
    assert tpl.render(concept="moon") == 'Concept moon; literal {"json": 1}\n'
    assert tpl.id.startswith("mine@")
    with pytest.raises(ConfigError, match=r"missing required placeholders \['culture'\]"):
        load_prompt(ok, required=("concept", "culture"))
    with pytest.raises(ConfigError, match=r"unknown placeholders \['concept'\]"):
        load_prompt(ok, required=(), allowed=("culture",))
    bad = tmp_path / "bad.txt"
    bad.write_text("Unclosed {concept")
    with pytest.raises(ConfigError, match="literal braces"):
        load_prompt(bad)
    attr = tmp_path / "attr.txt"
    attr.write_text("{concept.name}")
    with pytest.raises(ConfigError, match="plain names"):
        load_prompt(attr)
