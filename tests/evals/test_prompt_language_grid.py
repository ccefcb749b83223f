"""--prompt-languages over the seven Cedar languages: the option, the grid rows (kb-prior, offline), and a scripted
model answering each language's prompt over HTTP."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.errors import ConfigError
from culturekb.evals.artemculture import ArtECultureRunner
from culturekb.evals.artemculture.command import artemculture_options
from culturekb.evals.cedar import CedarPredictor, CedarRunner
from culturekb.evals.cedar.command import cedar_options
from culturekb.evals.commands import prompt_language_tuple
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.calibration import PriorModel
from culturekb.inference.predictors import KBPriorPredictor
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample, get_scheme
from culturekb.models.chat import OpenAICompatClient
from culturekb.retrieval.index import build_index
from culturekb.retrieval.retriever import Retriever, open_retriever
from culturekb.text.prompts import PROMPT_LANGUAGES

SEVEN = ",".join(PROMPT_LANGUAGES)
CEDAR, ARTEMIS = get_scheme("cedar14"), get_scheme("artemis9")
# the "situation" line of each language's Cedar prompt, and the start of its cue block
SITUATION = {"en": "Situation:", "zh": "情境：", "ar": "الموقف:", "hi": "स्थिति:", "ja": "状況：", "es": "Situación:",
             "sw": "Hali:"}
CUE_FRAME = {"en": "Cultural cues for people", "zh": "文化背景人群的文化线索", "ar": "إشارات ثقافية",
             "hi": "संस्कृति के लोगों के लिए सांस्कृतिक संकेत", "ja": "人々のための文化的な手がかり",
             "es": "Pistas culturales", "sw": "Vidokezo vya kitamaduni"}


def _cedar_kb() -> KnowledgeBase:
    tuples = [KnowledgeTuple(concept="lantern", culture=c, label="happiness", distribution={"happiness": 1.0},
                             support=4, rationales=["lanterns at the festival"]) for c in PROMPT_LANGUAGES]
    return KnowledgeBase(tuples, CEDAR, build_config={"cultures": list(PROMPT_LANGUAGES)},
                         extra_counts={"label_prior": {c: {"sadness": 2} for c in PROMPT_LANGUAGES}})


def _items() -> list[Sample]:
    return [Sample(id=f"i-{c}", culture=c, text="Red lanterns hang over the street at night.",
                   question="How do the people feel?", label="happiness" if c != "sw" else "sadness",
                   metadata={"modality": "text"}) for c in PROMPT_LANGUAGES]


@pytest.fixture(scope="module")
def retriever(default_embedder: Any) -> Retriever:
    return open_retriever(_cedar_kb(), default_embedder, backend="numpy")


def test_the_option_takes_the_seven_languages_and_normalises_them(tmp_path: Path) -> None:
    art = artemculture_options([tmp_path / "d.csv"], tmp_path / "kb", tmp_path / "out", prompt_languages=SEVEN)
    cedar = cedar_options(tmp_path / "d.jsonl", tmp_path / "out", kb=tmp_path / "kb", prompt_languages=SEVEN)
    assert art.prompt_languages == cedar.prompt_languages == PROMPT_LANGUAGES
    assert prompt_language_tuple(" zh-CN, ZH ,ja_JP", "cedar_know") == ("zh", "ja")
    assert prompt_language_tuple(None, "cedar_know") is None
    with pytest.raises(ConfigError, match=r"no packaged cedar_know prompt in \['ko'\].*'sw', 'zh'\]"):
        cedar_options(tmp_path / "d.jsonl", tmp_path / "out", prompt_languages="en,ko")


def test_cedar_kb_prior_grid_has_a_row_per_language(retriever: Retriever, tmp_path: Path) -> None:
    runner = CedarRunner(_items(), CedarPredictor("cedar14", retriever), modes=["know"],
                         prompt_languages=PROMPT_LANGUAGES, progress=False)
    result = runner.run(tmp_path)
    grid = result.metrics["grid"]
    assert sorted(grid) == sorted(PROMPT_LANGUAGES)
    for row in grid.values():  # kb-prior ignores the prompt language: every row is the same, sw's item is wrong
        assert row == {c: (0.0 if c == "sw" else 1.0) for c in PROMPT_LANGUAGES}
    assert set(result.metrics["settings"]) == {"know", *(f"know@{c}" for c in PROMPT_LANGUAGES)}
    for lang in PROMPT_LANGUAGES:  # the cue blocks were made in the prompt language
        preds = result.predictions[f"know@{lang}"]
        assert {p.prompt_language for p in preds} == {lang}
        assert all(p.template_id.startswith(f"cues.{lang}@") and getattr(p, "cue_status", "") == "matched"
                   for p in preds)
    md = (tmp_path / "cedar.md").read_text(encoding="utf-8")
    table = md[md.index("Prompt language x data language"):]
    assert all(re.search(rf"^\| {c} \|", table, re.M) for c in PROMPT_LANGUAGES)


def test_artemculture_kb_prior_grid_has_a_row_per_language(default_embedder: Any, tmp_path: Path) -> None:
    kb = KnowledgeBase([KnowledgeTuple(concept="skull", culture=c, label="fear", distribution={"fear": 1.0},
                                       support=3) for c in PROMPT_LANGUAGES],
                       extra_counts={"label_prior": {c: {"sadness": 3} for c in PROMPT_LANGUAGES}})
    samples = [Sample(id=f"t::{c}", culture=c, label="fear", split="test", concepts=["skull"])
               for c in PROMPT_LANGUAGES]
    samples += [Sample(id=f"tr::{c}", culture=c, label="sadness", split="train", concepts=["x"])
                for c in PROMPT_LANGUAGES]
    predictor = KBPriorPredictor(Augmenter(open_retriever(kb, default_embedder, backend="numpy")),
                                 PriorModel(alpha=0.0))  # the tuples' own P(e): fear everywhere
    result = ArtECultureRunner(samples, predictor, ARTEMIS, modes=["know"], prompt_languages=PROMPT_LANGUAGES,
                               kb_version=kb.version, progress=False).run(tmp_path)
    settings = result.metrics["settings"]
    grid_rows = {v["prompt_language"]: v["per_culture"] for v in settings.values() if v["prompt_language"]}
    assert list(grid_rows) == list(PROMPT_LANGUAGES)
    assert all(row == dict.fromkeys(sorted(PROMPT_LANGUAGES), 1.0) for row in grid_rows.values())
    md = (tmp_path / "artemculture.md").read_text(encoding="utf-8")
    table = md[md.index("Prompt language x culture"):]
    assert all(re.search(rf"^\| {c} \|", table, re.M) for c in PROMPT_LANGUAGES)


def _language_of(prompt: str) -> str:
    found = [lang for lang, word in SITUATION.items() if word in prompt]
    assert len(found) == 1, prompt
    return found[0]


def test_a_model_answers_each_language_prompt(retriever: Retriever, openai_server: Any, tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    def respond(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        lang = _language_of(prompt)
        seen[lang] = prompt
        return json.dumps({"emotion": "happiness", "explanation": lang})  # the format every prompt asks for

    server = openai_server(respond)
    client = OpenAICompatClient("grid-vlm", base_url=server.base_url, max_retries=0)
    result = CedarRunner(_items(), CedarPredictor("cedar14", retriever, client), modes=["know"],
                         prompt_languages=PROMPT_LANGUAGES, progress=False).run(tmp_path)
    assert sorted(seen) == sorted(PROMPT_LANGUAGES)
    for lang, prompt in seen.items():
        assert CUE_FRAME[lang] in prompt  # the cue block is in the prompt's language too
        assert ("- happiness" in prompt) and ("happiness（" in prompt if lang in ("zh", "ja") else True)
    for lang in PROMPT_LANGUAGES:
        preds = result.predictions[f"know@{lang}"]
        assert all(p.label == "happiness" and p.parse_status == "json" and p.explanation == lang for p in preds)
        assert all(p.template_id.startswith(f"cedar_know.{lang}@") for p in preds)
        assert {p.template_status for p in preds} == {"source" if lang == "en" else "unchecked"}
    grid = result.metrics["grid"]
    assert sorted(grid) == sorted(PROMPT_LANGUAGES)
    assert all(row["sw"] == 0.0 and row["ja"] == 1.0 for row in grid.values())


def test_cli_cedar_over_the_seven_languages(default_embedder: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)
    kb = _cedar_kb()
    kb.save(tmp_path / "kb")
    build_index(kb, default_embedder, "faiss")
    data = tmp_path / "cedar.jsonl"
    data.write_text("".join(json.dumps({"id": s.id, "language": s.culture, "modality": "text", "narrative": s.text,
                                        "question": s.question, "label": s.label}) + "\n" for s in _items()),
                    encoding="utf-8")
    app = __import__("culturekb.cli", fromlist=["app"]).app
    result = CliRunner().invoke(app, ["eval", "cedar", str(data), "--kb", str(tmp_path / "kb"), "--out",
                                      str(tmp_path / "run"), "--modes", "know", "--prompt-languages", SEVEN])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "run" / "cedar.json").read_text(encoding="utf-8"))
    assert sorted(report["grid"]) == sorted(PROMPT_LANGUAGES)
    assert all(sorted(row) == sorted(PROMPT_LANGUAGES) for row in report["grid"].values())
    bad = CliRunner().invoke(app, ["eval", "cedar", str(data), "--kb", str(tmp_path / "kb"), "--out",
                                   str(tmp_path / "bad"), "--prompt-languages", "en,ko"])
    assert bad.exit_code == 2 and "ko" in bad.output and "cedar_know" in bad.output
