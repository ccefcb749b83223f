"""Unread answers are visible in every run report, and the label words that read them can be given (``--label-words``)
or learned at build time from a paired native-label column: a whole build and ArtECulture run in Hindi and Amharic,
with the model's answers served over real HTTP by the scripted server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.unread import unread_summary, unread_tables, unread_word
from culturekb.inference.base import Prediction

LABELS = ["joy", "sadness", "anger", "fear", "guilt", "neutral"]
NATIVE = {("hi", "neutral"): "साधारण", ("hi", "guilt"): "अपराध", ("am", "neutral"): "ተራ", ("am", "guilt"): "ወንጀል",
          ("hi", "joy"): "आनंद", ("am", "joy"): "ደስታ"}
TEXTS = {"neutral": "a quiet street with a lamp", "guilt": "a broken window and a stolen bag",
         "joy": "a garden party with music"}


def _pred(sid: str, status: str, raw: str, lang: str = "hi", label: str | None = None) -> Prediction:
    return Prediction(sample_id=sid, culture=lang, mode="orig", label=label, raw=raw, parse_status=status,  # type: ignore[arg-type]
                      prompt_language=lang)


def test_unread_words_are_counted_per_setting_and_language() -> None:
    preds = {"orig": [_pred("1", "invalid", "साधारण"), _pred("2", "invalid", '{"emotion": "साधारण।"}'),
                      _pred("3", "invalid", "मुझे लगता है कि यह भावना अपराध है।"),
                      _pred("4", "text", "neutral", label="neutral"), _pred("5", "error", ""),
                      _pred("6", "invalid", "ስሜት: ተራ", "am")]}
    section = unread_summary(preds, label_words=True)
    assert section["unread"] == 4 and section["failed"] == 1 and section["answers"] == 6
    assert section["by_setting"] == [
        {"setting": "orig", "prompt_language": "am", "answers": 1, "unread": 1, "failed": 0},
        {"setting": "orig", "prompt_language": "hi", "answers": 5, "unread": 3, "failed": 1}]
    top = {w["word"]: (w["count"], w["prompt_languages"]) for w in section["top_unread"]}
    assert top == {"साधारण": (2, {"hi": 2}), "... अपराध है": (1, {"hi": 1}), "ተራ": (1, {"am": 1})}
    assert "--label-words FILE" in section["how_to_add"] and '{"hi": {"<label>": ["साधारण"]}}' in section[
        "how_to_add"]
    tables = unread_tables(section)
    assert set(tables) == {"unread_answers", "unread_words"} and "--label-words" in tables["unread_words"].note
    assert "how_to_add" not in unread_summary(preds)  # a runner whose answers are not label words: no hint
    assert unread_word("Answer: Calm.") == "calm" and unread_word("") == ""


def _rows(cultures: tuple[str, ...], paired: bool) -> list[dict[str, Any]]:
    rows = []
    for culture in cultures:
        for label, text in TEXTS.items():
            for i in range(4):
                meta: dict[str, Any] = {"image_id": f"{culture}-{label}-{i}"}
                if paired:
                    meta["label_native"] = NATIVE[(culture, label)]
                rows.append({"id": f"{culture}-{label}-{i}", "culture": culture, "label": label,
                             "text": f"{text} number {i}", "split": "train" if i < 3 else "test", "metadata": meta})
    return rows


def _respond(body: dict[str, Any]) -> str:
    """The Hindi prompt gets a Hindi answer, any other (the English fallback of Amharic) an Amharic one: each in the
    annotators' word for neutral, which no packaged list holds."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    word = "साधारण" if "भावना" in text else "ተራ"
    return json.dumps({"emotion": word, "explanation": "-"}, ensure_ascii=False)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("unread")
    out = {"root": root, "scheme": root / "six.json"}
    out["scheme"].write_text(json.dumps({"name": "six", "labels": LABELS}), encoding="utf-8")
    for name, paired in (("plain", False), ("paired", True)):
        path = root / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows(("hi", "am"), paired)),
                        encoding="utf-8")
        out[name] = path
    return out


def _build(data: dict[str, Path], name: str, embedder: Any) -> tuple[Path, dict[str, Any]]:
    from culturekb.kb import KnowledgeBase
    from culturekb.retrieval import build_index
    from culturekb.workflows import build_from_files

    kb_dir = data["root"] / f"kb-{name}"
    result = build_from_files([data[name]], kb_dir, scheme=str(data["scheme"]), cache_dir=data["root"] / "cache",
                              progress=False, loaded_embedder=embedder)
    build_index(KnowledgeBase.load(kb_dir), embedder, "faiss")
    return kb_dir, result.report


def _run(data: dict[str, Path], kb_dir: Path, out: Path, server: Any, **kw: Any) -> tuple[Any, dict[str, Any]]:
    from culturekb.evals.artemculture import ArtECultureSpec
    from culturekb.workflows import run_benchmark

    spec = ArtECultureSpec(data=(data["paired"],), kb_dir=kb_dir, out=out, model="openai:vlm",
                           base_url=server.base_url, modes=("orig",), progress=False, **kw)
    result = run_benchmark("artemculture", spec)
    return result, json.loads((out / "run.json").read_text(encoding="utf-8"))


def _labels(result: Any) -> dict[str, str | None]:
    return {p.sample_id.split("-")[0]: p.label for p in result.predictions["orig"]}


def test_hindi_and_amharic_words_are_read_once_given_or_learned(
        data: dict[str, Path], default_embedder: Any, openai_server: Callable[..., Any]) -> None:
    server = openai_server(_respond)
    plain_kb, _ = _build(data, "plain", default_embedder)

    # before: no list holds the words; the run report lists them, with how to add them
    before, run = _run(data, plain_kb, data["root"] / "run-before", server)
    assert _labels(before) == {"hi": None, "am": None}
    unread = run["unread_answers"]
    assert unread["unread"] == unread["answers"] == 6
    assert {w["word"]: w["count"] for w in unread["top_unread"]} == {"साधारण": 3, "ተራ": 3}
    assert "--label-words FILE" in unread["how_to_add"]
    markdown = (data["root"] / "run-before" / "artemculture.md").read_text(encoding="utf-8")
    assert "## Unread answers per setting and prompt language" in markdown and "| साधारण | 3 | hi 3 |" in markdown
    assert "Most frequent unread answers" in before.tables["unread_words"].title  # what `culturekb eval` prints

    # (a) given: --label-words FILE on the eval; the Hindi prompt shows the word
    words = data["root"] / "words.json"
    words.write_text(json.dumps({"hi": {"neutral": ["साधारण"]}, "am": {"neutral": "ተራ"}}, ensure_ascii=False),
                     encoding="utf-8")
    seen = len(server.requests)
    given, run = _run(data, plain_kb, data["root"] / "run-given", server, label_words=words)
    assert all(p.label == "neutral" for p in given.predictions["orig"])
    assert run["unread_answers"]["unread"] == 0 and "how_to_add" not in run["unread_answers"]
    assert "|label-words:" in run["config"]["predictor"]
    prompts = [json.dumps(b, ensure_ascii=False) for b in server.requests[seen:]]
    assert any("neutral (साधारण)" in p for p in prompts)

    # (b) learned: a build from the data with a paired native-label column
    paired_kb, report = _build(data, "paired", default_embedder)
    learned = {(w["language"], w["word"]): w["label"] for w in report["label_words"]["learned"]}
    assert learned[("hi", "साधारण")] == "neutral" and learned[("am", "ተራ")] == "neutral"
    assert learned[("hi", "अपराध")] == "guilt" and learned[("am", "ወንጀል")] == "guilt"
    assert "## Label words" in (paired_kb / "build_report.md").read_text(encoding="utf-8")
    manifest = json.loads((paired_kb / "manifest.json").read_text(encoding="utf-8"))
    assert "साधारण" in json.dumps(manifest, ensure_ascii=False)
    seen = len(server.requests)
    after, run = _run(data, paired_kb, data["root"] / "run-learned", server)
    assert all(p.label == "neutral" for p in after.predictions["orig"])
    assert run["unread_answers"]["unread"] == 0
    assert any("neutral (साधारण)" in json.dumps(b, ensure_ascii=False) for b in server.requests[seen:])


@pytest.mark.parametrize("command", [["eval", "artemculture"], ["eval", "cedar"], ["build"]])
def test_label_words_is_an_option_of_the_commands_that_read_labels(command: list[str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.evals.cedar.command import cedar_options

    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--label-words" in result.output
    bad = tmp_path / "words.json"
    bad.write_text('{"hi": ["साधारण"]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="should map labels to words"):  # checked when the options are read
        cedar_options(tmp_path / "d.jsonl", tmp_path / "out", label_words=bad)


def test_every_runner_report_lists_unread_answers(tmp_path: Path) -> None:
    """The Runner base writes the section, whatever the benchmark (the knowledge report included): a runner with
    no label words gets the counts and words, without the --label-words hint."""
    from collections.abc import Mapping, Sequence

    from culturekb.evals.runner import Runner, Setting
    from culturekb.kb import Sample

    class Answers:
        id = "scripted"

        def predict(self, samples: Sequence[Sample], mode: str = "orig", prompt_language: str | None = None
                    ) -> list[Prediction]:
            return [_pred(s.id, "invalid" if s.id == "a" else "text", "ስሜት: ተራ" if s.id == "a" else "joy", "am",
                          None if s.id == "a" else "joy") for s in samples]

    class Toy(Runner):
        def load(self) -> list[Sample]:
            return [Sample(id=i, culture="am", label="joy") for i in "ab"]

        def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
                  ) -> dict[str, Any]:
            return {"n": len(samples)}

    result = Toy(Answers(), settings=[Setting("orig")], progress=False).run(tmp_path)
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["unread_answers"]
    assert run["unread"] == 1 and run["top_unread"] == [{"word": "ተራ", "count": 1, "prompt_languages": {"am": 1}}]
    assert "how_to_add" not in run and set(result.tables) >= {"unread_answers", "unread_words"}
    markdown = (tmp_path / "Toy.md").read_text(encoding="utf-8")
    assert "| orig | am | 2 | 1 | 0 |" in markdown and "| ተራ | 1 | am 1 |" in markdown
