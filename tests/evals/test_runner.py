"""The Runner base: a tiny subclass, a deterministic predictor, resume after an interruption, the registry."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from culturekb import registry
from culturekb.errors import ConfigError, DataError, ProviderError
from culturekb.evals import (
    CHECKPOINT_FILE,
    PREDICTIONS_FILE,
    BarPlot,
    Plot,
    Runner,
    Setting,
    Table,
    accuracy,
    accuracy_by_group,
    align_predictions,
    get_runner,
    list_runners,
    register_runner,
)
from culturekb.evals.ricevl import box_iou
from culturekb.inference.base import ParseStatus, Prediction
from culturekb.kb.schema import Sample

LABELS = {"en": ["awe", "sadness"], "zh": ["sadness", "awe"]}


def make_samples() -> list[Sample]:
    """10 samples: en gets awe, awe, awe, sadness, sadness; zh gets sadness x3, awe x2."""
    golds = {"en": ["awe", "awe", "awe", "sadness", "sadness"], "zh": ["sadness", "sadness", "sadness", "awe", "awe"]}
    return [Sample(id=f"{c}-{i}", culture=c, label=lab) for c, labs in golds.items() for i, lab in enumerate(labs)]


class CulturePredictor:
    """Deterministic: `orig` predicts the culture's first label, `know` its second; records every call."""

    def __init__(self, id: str = "culture-first", fail_after: int | None = None, invalid: set[str] | None = None,
                 errors: set[str] | None = None):
        self.id = id
        self.fail_after = fail_after
        self.invalid = invalid or set()
        self.errors = errors or set()
        self.calls: list[tuple[str, list[str]]] = []

    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[Prediction]:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.calls.append((mode, [s.id for s in samples]))
        k = 0 if mode == "orig" else 1
        out = []
        for s in samples:
            failed = s.id in self.invalid or s.id in self.errors
            status: ParseStatus = "error" if s.id in self.errors else "invalid" if s.id in self.invalid else "json"
            out.append(Prediction(sample_id=s.id, culture=s.culture, mode=mode, prompt_language=prompt_language or "en",
                                  label=None if failed else LABELS[s.culture][k], parse_status=status))
        return out

    def predicted_ids(self) -> list[str]:
        return [sid for _, ids in self.calls for sid in ids]


class ToyRunner(Runner):
    name = "toy"

    def __init__(self, predictor: Any = None, samples: list[Sample] | None = None, **kw: Any) -> None:
        super().__init__(predictor, **kw)
        self.samples = make_samples() if samples is None else samples

    def load(self) -> list[Sample]:
        return list(self.samples)

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        out: dict[str, Any] = {"accuracy": {}, "by_culture": {}}
        for setting, preds in predictions_by_setting.items():
            golds, labels = align_predictions(samples, preds)
            out["accuracy"][setting.key] = accuracy(labels, golds)
            out["by_culture"][setting.key] = accuracy_by_group(labels, golds, [s.culture for s in samples])
        return out

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        return {"by_culture": Table.from_nested("Accuracy per culture", results["by_culture"], row_label="mode")}

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        return [BarPlot.from_nested("accuracy", "Accuracy per culture per mode", results["by_culture"])]


def read_checkpoint(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / PREDICTIONS_FILE).read_text().splitlines()]


def test_run_scores_reports_and_times(tmp_path: Path) -> None:
    pred = CulturePredictor(invalid={"en-0"})
    result = ToyRunner(pred, chunk_size=4, progress=False).run(tmp_path)
    # orig: en->awe (en-0 invalid, en-1, en-2 right = 2/5), zh->sadness (3/5): 5/10
    # know: en->sadness (2/5), zh->awe (2/5): 4/10
    assert result.metrics["accuracy"] == {"orig": 0.5, "know": 0.4}
    assert result.metrics["by_culture"]["orig"] == {"en": 0.4, "zh": 0.6}
    assert [s.key for s in result.settings] == ["orig", "know"]
    assert result.n_predicted == {"orig": 10, "know": 10} and result.n_resumed == {"orig": 0, "know": 0}
    # chunks of 4: 4 + 4 + 2 per setting
    assert [len(ids) for _, ids in pred.calls] == [4, 4, 2, 4, 4, 2]
    assert [p.sample_id for p in result.predictions["orig"]] == [s.id for s in make_samples()]
    assert {"load", "predict", "predict:orig", "predict:know", "score", "report", "total"} <= set(result.timings)
    for name in ("toy.json", "toy.md", "toy-accuracy.png", "run.json", PREDICTIONS_FILE, CHECKPOINT_FILE):
        assert (tmp_path / name).is_file(), name
    assert json.loads((tmp_path / "toy.json").read_text())["accuracy"] == {"orig": 0.5, "know": 0.4}
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["n_samples"] == 10 and run["config"] == {"runner": "toy", "predictor": "culture-first"}
    assert len(read_checkpoint(tmp_path)) == 20


def test_interrupted_run_resumes_without_repeating(tmp_path: Path) -> None:
    first = CulturePredictor(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        ToyRunner(first, chunk_size=3, progress=False).run(tmp_path)
    saved = read_checkpoint(tmp_path)
    assert [r["prediction"]["sample_id"] for r in saved] == ["en-0", "en-1", "en-2", "en-3", "en-4", "zh-0"]
    assert {r["setting"] for r in saved} == {"orig"}

    second = CulturePredictor()
    result = ToyRunner(second, chunk_size=3, progress=False).run(tmp_path)
    # only the 4 missing orig samples, then all 10 know samples
    assert second.calls[0] == ("orig", ["zh-1", "zh-2", "zh-3"])
    assert second.calls[1] == ("orig", ["zh-4"])
    assert [m for m, _ in second.calls[2:]] == ["know"] * 4
    assert len(second.predicted_ids()) == 14
    assert result.n_resumed == {"orig": 6, "know": 0} and result.n_predicted == {"orig": 4, "know": 10}
    assert result.metrics["accuracy"] == {"orig": 0.6, "know": 0.4}  # same as an uninterrupted run

    third = CulturePredictor()
    again = ToyRunner(third, chunk_size=3, progress=False).run(tmp_path)
    assert third.calls == [] and again.metrics == result.metrics
    assert again.n_resumed == {"orig": 10, "know": 10}
    assert len(read_checkpoint(tmp_path)) == 20


def test_other_config_is_refused_unless_fresh(tmp_path: Path) -> None:
    ToyRunner(CulturePredictor(), progress=False).run(tmp_path)
    with pytest.raises(ConfigError, match="another config"):
        ToyRunner(CulturePredictor(id="other-model"), progress=False).run(tmp_path)
    other = CulturePredictor(id="other-model")
    result = ToyRunner(other, progress=False).run(tmp_path, resume=False)
    assert len(other.predicted_ids()) == 20 and result.n_resumed == {"orig": 0, "know": 0}
    assert len(read_checkpoint(tmp_path)) == 20


def test_failed_calls_are_retried_invalid_answers_are_not(tmp_path: Path) -> None:
    first = ToyRunner(CulturePredictor(invalid={"en-0"}, errors={"zh-0"}), settings=[Setting("orig")], progress=False)
    assert first.run(tmp_path).metrics["accuracy"] == {"orig": 0.4}  # both scored wrong: 4/10
    pred = CulturePredictor()
    result = ToyRunner(pred, settings=[Setting("orig")], progress=False).run(tmp_path)
    assert pred.calls == [("orig", ["zh-0"])]  # the failed call only; the invalid answer stands
    assert result.metrics["accuracy"] == {"orig": 0.5}
    keep = CulturePredictor(errors={"zh-0"})
    ToyRunner(keep, settings=[Setting("orig")], progress=False).run(tmp_path / "b")
    kept = ToyRunner(CulturePredictor(), settings=[Setting("orig")], progress=False, retry_errors=False)
    assert kept.run(tmp_path / "b").n_predicted == {"orig": 0}


def test_torn_last_line_is_predicted_again(tmp_path: Path) -> None:
    ToyRunner(CulturePredictor(), progress=False).run(tmp_path)
    path = tmp_path / PREDICTIONS_FILE
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # cut the last record in the middle
    pred = CulturePredictor()
    result = ToyRunner(pred, progress=False).run(tmp_path)
    assert pred.calls == [("know", ["zh-4"])]
    assert result.n_resumed == {"orig": 10, "know": 9}
    assert len(read_checkpoint(tmp_path)) == 20


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    ToyRunner(CulturePredictor(), progress=False).run(tmp_path)
    path = tmp_path / PREDICTIONS_FILE
    lines = path.read_text().splitlines()
    lines[3] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"{PREDICTIONS_FILE}, line 4"):
        ToyRunner(CulturePredictor(), progress=False).run(tmp_path)


def test_settings_grid_and_prompt_language(tmp_path: Path) -> None:
    grid = Setting.grid(["orig", "know"], ["en", "zh"])
    assert [s.key for s in grid] == ["orig@en", "orig@zh", "know@en", "know@zh"]
    result = ToyRunner(CulturePredictor(), settings=grid, progress=False, limit=2).run(tmp_path)
    assert result.n_samples == 2
    assert {p.prompt_language for p in result.predictions["know@zh"]} == {"zh"}
    assert set(result.metrics["accuracy"]) == {"orig@en", "orig@zh", "know@en", "know@zh"}
    with pytest.raises(ConfigError, match="repeat the keys"):
        ToyRunner(CulturePredictor(), settings=[Setting("orig"), Setting("orig")]).settings()
    assert Setting("global", name="SEA framing").key == "SEA framing"


class ShortPredictor(CulturePredictor):
    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[Prediction]:
        return super().predict(samples, mode, prompt_language)[:-1]


class ReversedPredictor(CulturePredictor):
    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[Prediction]:
        return super().predict(samples, mode, prompt_language)[::-1]


@pytest.mark.parametrize(("predictor", "match"), [(ShortPredictor(), "returned 2 predictions for 3 samples"),
                                                  (ReversedPredictor(), "input order")])
def test_bad_predictor_output_is_an_error(tmp_path: Path, predictor: CulturePredictor, match: str) -> None:
    with pytest.raises(ProviderError, match=match):
        ToyRunner(predictor, chunk_size=3, progress=False).run(tmp_path)
    assert not (tmp_path / PREDICTIONS_FILE).exists()  # nothing bad was checkpointed


def test_bad_runner_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="given no predictor"):
        ToyRunner(None, progress=False).run(tmp_path)
    dup = [Sample(id="x", culture="en", label="awe")] * 2
    with pytest.raises(DataError, match="occurs twice"):
        ToyRunner(CulturePredictor(), samples=dup, progress=False).run(tmp_path)
    with pytest.raises(DataError, match="loaded no samples"):
        ToyRunner(CulturePredictor(), samples=[], progress=False).run(tmp_path)
    with pytest.raises(ConfigError, match="chunk_size"):
        ToyRunner(CulturePredictor(), chunk_size=0)


# -- a grounding-style runner: no Predictor, its own record type, checkpointed boxes --------------------------


class BoxPrediction(Prediction):
    box: list[float] | None = None


class BoxRunner(Runner):
    """Predicts a fixed box per sample (None for one sample) and scores mean IoU."""

    name = "boxes"
    record_type = BoxPrediction

    def __init__(self, **kw: Any) -> None:
        super().__init__(None, settings=[Setting("ground")], **kw)
        self.calls = 0

    def load(self) -> list[Sample]:
        return [Sample(id=f"b{i}", culture="SG", metadata={"bbox": [0, 0, 2, 2]}) for i in range(3)]

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        self.calls += 1
        boxes: dict[str, list[float] | None] = {"b0": [0, 0, 2, 2], "b1": [1, 1, 3, 3], "b2": None}
        return [BoxPrediction(sample_id=s.id, culture=s.culture, mode=setting.mode, label=None, box=boxes[s.id])
                for s in samples]

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        (preds,) = predictions_by_setting.values()
        ious = [box_iou(p.box, s.metadata["bbox"]) for s, p in zip(samples, preds, strict=True)]  # type: ignore
        return {"mean_iou": sum(ious) / len(ious), "unparsed": sum(p.box is None for p in preds)}  # type: ignore


def test_custom_record_type_round_trips_through_checkpoint(tmp_path: Path) -> None:
    first = BoxRunner(chunk_size=2, progress=False).run(tmp_path)
    # IoUs 1, 1/7, 0 -> mean 8/21
    assert first.metrics == {"mean_iou": pytest.approx(8 / 21), "unparsed": 1}
    rerun = BoxRunner(chunk_size=2, progress=False)
    second = rerun.run(tmp_path)
    assert rerun.calls == 0
    assert all(isinstance(p, BoxPrediction) for p in second.predictions["ground"])
    assert second.metrics == first.metrics


# -- registry -------------------------------------------------------------------------------------------------


@pytest.fixture
def empty_registry() -> Iterator[None]:
    with registry.RUNNERS.isolated():  # registrations made in the test are undone afterwards
        yield


@pytest.mark.usefixtures("empty_registry")
def test_registry() -> None:
    @register_runner("Toy-Two")
    class TwoRunner(ToyRunner):
        name = ""

    assert get_runner("toy-two") is TwoRunner and TwoRunner.name == "toy-two"
    assert "toy-two" in list_runners()
    with pytest.raises(ConfigError, match="already registered"):
        register_runner("toy-two", ToyRunner)
    register_runner("toy-two", ToyRunner, replace=True)
    assert get_runner("toy-two") is ToyRunner and ToyRunner.name == "toy"  # a class's own name is kept
    with pytest.raises(ConfigError, match=r"unknown benchmark runner 'nope'; choose one of: (.*, )?toy-two"):
        get_runner("nope")
    with pytest.raises(ConfigError, match="invalid"):
        register_runner("a b", ToyRunner)


@pytest.mark.usefixtures("empty_registry")
def test_registry_lazy_strings() -> None:
    register_runner("lazy", f"{__name__}:ToyRunner")
    assert "lazy" in list_runners()
    assert get_runner("lazy") is ToyRunner
    register_runner("broken", "culturekb.no_such_module:Runner")
    with pytest.raises(ConfigError, match="cannot be imported"):
        get_runner("broken")
    register_runner("notarunner", "culturekb.evals.metrics:accuracy")
    with pytest.raises(ConfigError, match="not a subclass"):
        get_runner("notarunner")
    with pytest.raises(ConfigError, match="not a subclass"):
        register_runner("plain", dict)  # type: ignore[arg-type]


class AskingPredictor(CulturePredictor):
    """Asks a model once per chunk (its answer is ignored), then predicts as `CulturePredictor`."""

    def __init__(self, client: Any) -> None:
        super().__init__(id="asking")
        self.model = client

    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[Prediction]:
        self.model.complete([{"role": "user", "content": f"{mode}: {[s.id for s in samples]}"}])
        return super().predict(samples, mode, prompt_language)


def test_run_json_counts_the_client_the_runner_declares(tmp_path: Path) -> None:
    """run.json's model section reads `Runner.client`: given to the constructor, or set by a subclass before it
    calls the base constructor; nothing is probed on the predictor (a predictor's attribute named otherwise)."""
    from culturekb.models import Model, ModelResponse

    class Echo:
        id = "echo"

        async def complete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
            return ModelResponse(text="ok", model=self.id)

    class OwnClientRunner(ToyRunner):
        def __init__(self, client: Any, **kw: Any) -> None:
            self.client = client  # set before the base constructor runs: kept
            super().__init__(AskingPredictor(client), **kw)

    with Model(Echo()) as client:
        runs = {"given": ToyRunner(AskingPredictor(client), client=client, chunk_size=5, progress=False),
                "own": OwnClientRunner(client, chunk_size=5, progress=False),
                "none": ToyRunner(AskingPredictor(client), chunk_size=5, progress=False)}
        for name, runner in runs.items():
            runner.run(tmp_path / name)
    sections = {n: json.loads((tmp_path / n / "run.json").read_text())["model"] for n in runs}
    assert sections["given"]["model"] == sections["own"]["model"] == "echo"
    assert sections["given"]["this_run"]["answers"] == sections["own"]["this_run"]["answers"] == 4  # 2 chunks x 2
    assert sections["none"]["model"] is None and sections["none"]["this_run"] == {}
