"""Every packaged prompt file says who wrote it and whether a native speaker checked it (CHECKED.json)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.text import prompts as prompts_module
from culturekb.text.prompts import (
    PROMPT_LANGUAGES,
    PromptCheck,
    load_prompt,
    prompt_check,
    prompt_checks,
    template_check_status,
)

PROMPTS = resources.files("culturekb.data").joinpath("prompts")
CULTURE_NAMES = json.loads(PROMPTS.joinpath("culture_names.json").read_text("utf-8"))


def _packaged_keys() -> set[str]:
    """``<name>.<language>`` of every packaged template file, and ``culture_names.<language>``."""
    files = {p.name[: -len(".txt")] for p in PROMPTS.iterdir() if p.name.endswith(".txt")}
    names = {f"culture_names.{lang}" for lang in CULTURE_NAMES if not lang.startswith("_")}
    return files | names


def test_every_packaged_prompt_file_has_a_check_entry_and_no_entry_is_stale() -> None:
    keys = _packaged_keys()
    entries = prompt_checks()
    assert len(keys) > 80
    assert sorted(keys - set(entries)) == []  # no file without a status
    assert sorted(set(entries) - keys) == []  # no status for a file that is gone


def test_entries_are_honest_about_their_status() -> None:
    for key, entry in prompt_checks().items():
        language = key.rsplit(".", 1)[1]
        assert entry.author.strip(), key
        assert entry.checked_by_native_speaker == (entry.status == "checked"), key
        if entry.status == "checked":
            assert entry.checked_by, key  # a check names who did it
        assert (entry.status == "source") == (language == "en" and entry.status != "checked"), key
    # the files written for issue 10 by a model are marked unchecked until a native speaker reviews them
    for name in ("predict_orig", "predict_know", "cedar_know", "cues", "harness_knowledge"):
        for language in ("hi", "ja", "es", "sw"):
            entry = prompt_check(name, language)
            assert entry.status == "unchecked" and "AI model" in entry.author, (name, language)


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_loaded_template_exposes_its_status_and_the_text_does_not(language: str) -> None:
    template = load_prompt("predict_know", language)
    assert isinstance(template.check, PromptCheck) and template.check.key == f"predict_know.{language}"
    assert template.check_status == ("source" if language == "en" else "unchecked")
    assert template.checked is False
    for word in ("unchecked", "CHECKED", "AI model", "native speaker"):
        assert word not in template.text  # the status lives beside the prompt, never in it


def test_user_templates_have_no_entry(tmp_path: Path) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("Culture {culture}\n", encoding="utf-8")
    template = load_prompt(mine)
    assert template.check is None and template.check_status == "user" and not template.checked
    (tmp_path / "predict_orig.hi.txt").write_text("{culture} {labels}\n", encoding="utf-8")
    override = load_prompt("predict_orig", "hi", override_dir=tmp_path)
    assert override.check is None and override.check_status == "user"
    assert template_check_status(override.id) == "user"  # same name as a packaged file, other text


def test_template_check_status_from_ids() -> None:
    know_hi, know_en = load_prompt("predict_know", "hi"), load_prompt("predict_know", "en")
    assert template_check_status(know_hi.id) == "unchecked"
    assert template_check_status(know_en.id) == "source"
    cues_zh, item_zh = load_prompt("cues", "zh"), load_prompt("cue_item", "zh")
    assert template_check_status(f"{load_prompt('cedar_know', 'zh').id}+{cues_zh.id}+{item_zh.id}") == "unchecked"
    assert template_check_status(f"{know_en.id}+{item_zh.id}") == "source+unchecked"
    assert template_check_status("") == ""
    assert template_check_status("predict_know.hi@000000000000") == "user"
    assert template_check_status("nothing.xx@abc") == "user"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"status": "reviewed", "checked_by_native_speaker": False, "author": "a"}, "status 'reviewed'"),
        ({"status": "unchecked", "checked_by_native_speaker": True, "author": "a"}, "exactly when"),
        ({"status": "checked", "checked_by_native_speaker": True, "author": "a"}, "needs checked_by"),
        ({"status": "unchecked", "checked_by_native_speaker": False, "author": " "}, "author is missing"),
        ({"status": "unchecked", "checked_by_native_speaker": False, "author": "a", "by": "x"}, "unknown fields"),
    ],
)
def test_malformed_entries_are_rejected(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        prompts_module._check_entry("predict_orig.xx", entry)


def test_a_packaged_file_without_an_entry_fails_on_load(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = {k: v for k, v in prompt_checks().items() if k != "judge.en"}
    monkeypatch.setattr(prompts_module, "prompt_checks", lambda: entries)
    with pytest.raises(ConfigError, match=r"judge\.en has no entry in culturekb/data/prompts/CHECKED\.json"):
        load_prompt("judge", "en")
