"""One prompt resolver, one fallback rule: a template missing in the language asked for is read in English and
marked ``fallback:en``; only a missing English file or broken placeholders raise."""

import re
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.cedar import cedar_template
from culturekb.inference.injection import CUES, load_block_template
from culturekb.inference.prompts import prediction_template
from culturekb.text.prompts import joint_language_status, load_prompt, resolve_prompt

PACKAGE = Path(__file__).resolve().parents[2] / "culturekb"


def test_a_language_with_the_template_is_native() -> None:
    zh = resolve_prompt("cedar_know", "zh-CN", required=("culture", "narrative", "question", "labels", "cues"),
                        allowed=("culture_id",))
    assert zh.id.startswith("cedar_know.zh@") and (zh.language, zh.requested_language) == ("zh", "zh")
    assert zh.language_status == "native" and zh.text == load_prompt("cedar_know", "zh").text


def test_a_missing_language_falls_back_to_english_and_records_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="culturekb.text.prompts"):
        fr = resolve_prompt("ricevl_global", "fr-CA", required=("question", "answer_format"), allowed=())
    assert fr.id == resolve_prompt("ricevl_global", "en").id and fr.text == load_prompt("ricevl_global", "en").text
    assert (fr.language, fr.requested_language, fr.language_status) == ("en", "fr", "fallback:en")
    # every loading path keeps the rule: prediction and Cedar templates, and knowledge blocks
    assert prediction_template("orig", "ko").language_status == "fallback:en"
    assert cedar_template("know", "sw").language_status == "native"
    assert cedar_template("orig", "tet").language_status == "fallback:en"
    block = load_block_template(CUES, "ko")
    assert (block.language, block.language_status) == ("en", "fallback:en")
    assert load_block_template(CUES, "ja").language_status == "native"


def test_a_missing_english_template_or_wrong_placeholders_still_raise(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no prompt template"):
        resolve_prompt("no_such_prompt", "ko")
    (tmp_path / "cedar_orig.ko.txt").write_text("{culture} {nonsense}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("unknown placeholders ['nonsense']")):
        cedar_template("orig", "ko", tmp_path)  # the user's Korean file exists, so it is read (and is wrong)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_prompt("cedar_orig", "ko", template_dir=tmp_path / "missing")


def test_a_users_folder_adds_a_language(tmp_path: Path) -> None:
    (tmp_path / "cues.ko.txt").write_text("{culture} 문화의 단서:\n{items}\n", encoding="utf-8")
    ko = resolve_prompt("cues", "ko", template_dir=tmp_path)
    assert ko.language_status == "native" and ko.source == str(tmp_path / "cues.ko.txt")
    assert resolve_prompt("cue_item", "ko", template_dir=tmp_path).language_status == "fallback:en"


def test_joint_status() -> None:
    assert joint_language_status("native", "native") == "native"
    assert joint_language_status("native", "", "fallback:en") == "fallback:en"
    assert joint_language_status("", "") == ""


def test_evals_and_inference_load_prompts_through_the_resolver() -> None:
    """`load_prompt` (one exact language, raising when it is missing) is the resolver's own step."""
    callers = [str(p.relative_to(PACKAGE)) for sub in ("evals", "inference") for p in (PACKAGE / sub).rglob("*.py")
               if re.search(r"\bload_prompt\(", p.read_text(encoding="utf-8"))]
    assert callers == []
