"""Typed run specs: built by the eval command lines, normalised, validated, and what the jobs take."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.artemculture.spec import ArtECultureSpec
from culturekb.evals.cedar.command import cedar_options
from culturekb.evals.cedar.spec import CedarSpec
from culturekb.evals.ricevl.command import ricevl_grounding_options, ricevl_vqa_options
from culturekb.evals.ricevl.spec import RiceVLGroundingSpec, RiceVLVQASpec


def test_paths_and_lists_are_normalised_and_the_spec_is_a_frozen_value() -> None:
    # a script may pass strings and lists: they become the declared Paths and tuples
    spec = RiceVLVQASpec(data="vqa.jsonl", out="runs/vqa", kb_dir="kb",  # type: ignore[arg-type]
                         setting_names=["sea", "kb-cues"], region_countries=["SG", "MY"],  # type: ignore[arg-type]
                         template_dir="prompts")  # type: ignore[arg-type]
    assert spec.data == Path("vqa.jsonl") and spec.out == Path("runs/vqa") and spec.kb_dir == Path("kb")
    assert spec.setting_names == ("sea", "kb-cues") and spec.region_countries == ("SG", "MY")
    assert spec.template_dir == Path("prompts") and spec.cache_dir is None
    assert spec == RiceVLVQASpec(data=Path("vqa.jsonl"), out=Path("runs/vqa"), kb_dir=Path("kb"),
                                 setting_names=("sea", "kb-cues"), region_countries=("SG", "MY"),
                                 template_dir=Path("prompts"))
    assert hash(spec) == hash(dataclasses.replace(spec))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.model = "openai:x"  # type: ignore[misc]
    assert dataclasses.replace(spec, limit=3).limit == 3
    art = ArtECultureSpec(data="train.csv", kb_dir=Path("kb"), out=Path("o"))  # type: ignore[arg-type]
    assert art.data == (Path("train.csv"),)  # one file is a list of one


def test_specs_refuse_what_no_job_can_run() -> None:
    with pytest.raises(ConfigError, match="needs the KB"):
        ArtECultureSpec(data=(Path("a.csv"),), out=Path("o"))
    with pytest.raises(ConfigError, match="limit must be at least 1"):
        CedarSpec(data=Path("c.jsonl"), out=Path("o"), limit=0)
    with pytest.raises(TypeError):
        CedarSpec("c.jsonl", "o")  # type: ignore[misc,call-arg,arg-type]  # keyword-only: a spec reads as what was run


def test_command_lines_build_the_specs(tmp_path: Path) -> None:
    vqa = ricevl_vqa_options(data=tmp_path / "v.jsonl", out_dir=tmp_path / "o", settings="sea, kb-cues,",
                             region_countries="SG,MY", any_country=True, limit=5)
    assert vqa == RiceVLVQASpec(data=tmp_path / "v.jsonl", out=tmp_path / "o", setting_names=("sea", "kb-cues"),
                                region_countries=("SG", "MY"), allow_unknown_countries=True, limit=5)
    spec = cedar_options(data=tmp_path / "c.jsonl", out_dir=tmp_path / "o", modality="text", languages="en,zh")
    assert spec.modalities == ("text",) and spec.languages == ("en", "zh") and spec.modes == ("orig", "know")
    ground = ricevl_grounding_options(data=tmp_path / "g.jsonl", out_dir=tmp_path / "o")
    assert ground == RiceVLGroundingSpec(data=tmp_path / "g.jsonl", out=tmp_path / "o") and ground.model == "full-image"
