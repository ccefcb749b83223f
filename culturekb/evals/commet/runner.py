"""The CoMMET run: each story played as a real multi-turn chat, each answer judged before the next turn.

One runner item is one story (`culturekb.evals.commet.stories`). Playing it: a system message, then per turn one
user message (the feedback chosen by the judge's verdict on the previous answer, the next part of the story, the
turn's image, the question); the model's answer goes back into the conversation as an assistant message, so the
model sees its own earlier answers and the feedback on them. A story's calls are sequential; stories are played
concurrently (`concurrency` at a time, in threads sharing the client) and each is checkpointed when it ends
(`Runner.predict_stream`). A failed model or judge call ends the story as ``failed``; a rerun plays it again, and
the response cache answers the calls it had already made.

Settings: ``orig`` (the stories as given), ``kb-cues`` (the first turn starts with cultural cues for the story's
culture, retrieved for the first turn's concepts through the knowledge service, as Cedar's and RICE-VL's cue blocks
are) and ``blind`` (image-dependent stories played without their images; text-complete ones are skipped).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from culturekb._records import LoadReport, parse_field_map
from culturekb.errors import ConfigError, CultureKBError, DataError
from culturekb.evals._cues import item_concepts
from culturekb.evals.commet.command import commet_options
from culturekb.evals.commet.judges import AnswerJudge, JudgeRequest, OfflineAnswerJudge
from culturekb.evals.commet.records import StoryPrediction, TurnRecord
from culturekb.evals.commet.report import commet_plots, commet_tables, score_commet
from culturekb.evals.commet.spec import CommetSpec
from culturekb.evals.commet.stories import Outcome, Story, Turn
from culturekb.evals.context import RunContext
from culturekb.evals.reports import Plot, Table, base_run_header
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.inference.base import Prediction
from culturekb.inference.injection import BlockTemplate, KnowledgeBlock, KnowledgeRequest, KnowledgeService, cue_budget
from culturekb.inference.messages import DEFAULT_MAX_IMAGE_SIDE, image_part
from culturekb.kb.schema import Sample
from culturekb.models.base import Message, ModelClient
from culturekb.models.model import Model, as_model
from culturekb.models.tally import CallTally
from culturekb.retrieval.retriever import Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor
from culturekb.text.prompts import PromptTemplate, resolve_prompt

__all__ = ["COMMET_SETTINGS", "COMMET_CUES", "TurnRecord", "StoryPrediction", "CommetRunner"]

log = logging.getLogger(__name__)

COMMET_SETTINGS: tuple[str, ...] = ("orig", "kb-cues", "blind")
COMMET_CUES = BlockTemplate("cue_item", "commet_cues")
"""The kb-cues block: the packaged cue lines under a frame written for stories."""
_BLANK_LINES = re.compile(r"\n{3,}")


@register_runner("commet")
class CommetRunner(Runner):
    """CoMMET: multi-turn theory-of-mind stories, feedback chosen from the judged previous answer."""

    command = RunnerCommand(commet_options)

    default_modes = ("orig", "blind")
    record_type = StoryPrediction

    def __init__(
        self,
        stories: Sequence[Story],
        *,
        client: ModelClient,
        judge: AnswerJudge | None = None,
        retriever: Retriever | None = None,
        setting_names: Sequence[str] | None = None,
        concurrency: int = 4,
        concept_extractor: ConceptExtractor | None = None,
        max_cues: int = 5,
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 256,
        max_image_side: int = DEFAULT_MAX_IMAGE_SIDE,
        **kw: Any,
    ) -> None:
        if client is None:
            raise ConfigError("the CoMMET run needs a chat model (client=...); offline, point --model openai:NAME at "
                              "a local server such as culturekb.testing.ScriptedOpenAIServer")
        if concurrency < 1:
            raise ConfigError(f"concurrency (stories played at once) must be at least 1, got {concurrency}")
        self.stories = {s.id: s for s in stories}
        if len(self.stories) != len(stories):
            raise DataError("CoMMET: two stories share an id; story ids must be unique")
        names = list(setting_names) if setting_names is not None else None
        if names is None:
            names = ["orig"]
            if any(s.image_dependent for s in stories):
                names.append("blind")
            if retriever is not None:
                names.append("kb-cues")
        bad = [n for n in names if n not in COMMET_SETTINGS]
        if bad:
            raise ConfigError(f"unknown CoMMET settings {bad}; use any of {list(COMMET_SETTINGS)}")
        if "kb-cues" in names and retriever is None:
            raise ConfigError("the kb-cues setting needs a KB for the cues; pass --kb DIR, or drop kb-cues")
        self.setting_names = names
        self.client: Model = as_model(client)  # the one wrapper counts each story's calls (`Model.tally`)
        self.judge: AnswerJudge = judge if judge is not None else OfflineAnswerJudge()
        self.retriever = retriever
        self.concurrency = concurrency
        self.concept_extractor = concept_extractor or TextConceptExtractor(fields=STIMULUS_FIELDS)
        self.max_cues = max_cues
        self.cue_service = None if retriever is None else KnowledgeService(
            retriever, budget=cue_budget(max_cues), template=COMMET_CUES)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        self.system: PromptTemplate = resolve_prompt("commet_system", "en", required=(), allowed=(),
                                                     template_dir=template_dir)
        self.turn_template: PromptTemplate = resolve_prompt("commet_turn", "en", required=("question",),
                                                            allowed=("story", "feedback", "cues"),
                                                            template_dir=template_dir)
        super().__init__(None, client=self.client, **kw)

    # -- runner hooks -------------------------------------------------------------------------------------------
    def _tau(self) -> float | None:
        return self.retriever.tau if self.retriever is not None else None

    @classmethod
    def from_context(cls, ctx: RunContext) -> CommetRunner:
        """The spec's stories (read first), the chat model, the judge (``offline``: string match, then embedding
        similarity; else a judge model) and, with a KB, the kb-cues setting."""
        from culturekb.evals.commet.judges import ModelAnswerJudge
        from culturekb.evals.commet.stories import load_story_turns

        spec = ctx.spec
        assert isinstance(spec, CommetSpec)
        report = LoadReport()
        stories = load_story_turns(spec.data, data_root=spec.data_root, field_map=parse_field_map(spec.field_map),
                                   on_bad_row=spec.on_bad_row, report=report)
        retriever = ctx.retriever()
        client = ctx.client()
        if client is None:
            raise ConfigError(f"CoMMET needs a chat model, not {spec.model!r}; give --model openai:NAME --base-url "
                              "URL")
        judge: OfflineAnswerJudge | ModelAnswerJudge
        if spec.judge == "offline":
            judge = OfflineAnswerJudge(embedder_spec=spec.judge_embedder, threshold=spec.judge_threshold)
        else:
            judge_client = ctx.client(spec.judge, base_url=spec.judge_base_url, scope="")
            if judge_client is None:
                raise ConfigError(f"unknown CoMMET judge {spec.judge!r}; use 'offline' or a model such as "
                                  "'openai:MODEL'")
            judge = ModelAnswerJudge(judge_client, retries=spec.judge_retries, template_dir=spec.template_dir)
        return cls(stories, client=client, judge=judge, retriever=retriever, setting_names=spec.setting_names,
                   concurrency=ctx.max_concurrency, max_cues=spec.max_cues, template_dir=spec.template_dir,
                   max_tokens=spec.max_tokens, limit=spec.limit, progress=spec.progress,
                   load_report=report.to_dict())

    def load(self) -> list[Sample]:
        """One item per story."""
        return [s.to_sample() for s in self.stories.values()]

    def default_settings(self) -> list[Setting]:
        """One setting per chosen CoMMET setting (orig, kb-cues, blind)."""
        return [Setting(n) for n in self.setting_names]

    def config(self) -> dict[str, Any]:
        """What a story's record depends on: the model, the judge, the KB, the templates, cues and decoding."""
        return {"runner": self.label, "model": self.client.id, "judge": self.judge.id,
                "kb_version": self.retriever.kb.version if self.retriever is not None else None,
                "templates": [self.system.id, self.turn_template.id], "cue_template": list(map(str,
                                                                                              COMMET_CUES.parts())),
                "max_cues": self.max_cues, "tau": self._tau(),
                "concepts": self.concept_extractor.id,
                "decoding": [self.temperature, self.max_tokens, self.max_image_side]}

    def predict_stream(self, samples: Sequence[Sample], setting: Setting) -> Iterator[Sequence[Prediction]]:
        """Play the stories `concurrency` at a time; yield each story's record as soon as it ends."""
        if setting.mode not in COMMET_SETTINGS:
            raise ConfigError(f"unknown CoMMET setting {setting.mode!r}; use one of {list(COMMET_SETTINGS)}")
        stories = [self.stories[s.id] for s in samples]
        blocks = self.cue_blocks(samples) if setting.mode == "kb-cues" else {}
        if not stories:
            return
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(stories)), thread_name_prefix="commet")
        try:
            todo = iter(stories)
            running: set[Future[StoryPrediction]] = set()
            for story in todo:  # keep at most `concurrency` stories submitted, so an interruption wastes little
                running.add(pool.submit(self.play, story, setting, blocks.get(story.id)))
                if len(running) >= self.concurrency:
                    break
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield [future.result()]
                    nxt = next(todo, None)
                    if nxt is not None:
                        running.add(pool.submit(self.play, nxt, setting, blocks.get(nxt.id)))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # -- kb-cues ------------------------------------------------------------------------------------------------
    def cue_blocks(self, samples: Sequence[Sample]) -> dict[str, tuple[KnowledgeBlock, str]]:
        """(cue block, status) per story from one batched lookup: the first turn's concepts in the story's culture.

        The block is empty, with the reason as its status, when nothing matched (``no-match``), the first turn
        has no concepts, the KB lacks the culture (``culture-not-in-kb``) or the story names none (``no-culture``).
        """
        assert self.cue_service is not None
        concepts = item_concepts(samples, self.concept_extractor)
        requests = [KnowledgeRequest(cs, s.culture or "-", "know", "en", s.id)
                    for s, cs in zip(samples, concepts, strict=True)]
        blocks = self.cue_service.inject_many(requests, on_unknown_culture="skip")
        return {s.id: (block, block.status if s.culture else "no-culture")
                for s, block in zip(samples, blocks, strict=True)}

    # -- playing one story ----------------------------------------------------------------------------------------
    def _turn_text(self, turn: Turn, feedback: str, cues: str) -> str:
        text = self.turn_template.fill({"question": turn.question, "story": turn.text, "feedback": feedback,
                                        "cues": cues})
        return _BLANK_LINES.sub("\n\n", text).strip()

    def _user_message(self, story: Story, turn: Turn, text: str, image: str | None) -> Message:
        if image is None:
            return {"role": "user", "content": text}
        part = image_part(image, self.max_image_side, where=f"story {story.id!r}, turn {turn.index + 1}")
        return {"role": "user", "content": [part, {"type": "text", "text": text}]}

    def play(self, story: Story, setting: Setting, cue: tuple[KnowledgeBlock, str] | None = None
             ) -> StoryPrediction:
        """Play `story` in `setting` (with its `cue` block and status in ``kb-cues``): turn by turn, each answer
        judged before the next turn's feedback is chosen."""
        block = cue[0] if cue is not None else None
        blind = setting.mode == "blind"
        common: dict[str, Any] = {
            "sample_id": story.id, "culture": story.culture, "mode": setting.mode, "modality": story.modality,
            "category": story.category, "n_turns": len(story.turns), "model": self.client.id,
            "judge": self.judge.id, "prompt_language": "en",
            "template_id": f"{self.system.id}+{self.turn_template.id}",
            "template_status": "+".join(dict.fromkeys([self.system.check_status, self.turn_template.check_status])),
        }
        if blind and not story.image_dependent:
            return StoryPrediction(label=None, parse_status="text", story_status="skipped", **common)
        cues = block.text.strip() if block is not None else ""
        model_tally, judge_tally = CallTally(), CallTally()
        messages: list[Message] = []
        system = self.system.text.strip()
        if system:
            messages.append({"role": "system", "content": system})
        shown: list[str] = []
        previous: Outcome | None = None
        records: list[TurnRecord] = []
        failure: str | None = None
        for turn in story.turns:
            key, feedback = turn.feedback_for(previous)
            image = None if blind else turn.image
            base = {"turn": turn.index + 1, "category": turn.category, "question": turn.question,
                    "image_sent": image is not None, "feedback_key": key,
                    "previous_correct": None if previous is None else previous.correct,
                    "expected": list(turn.expected_for(previous))}
            text = self._turn_text(turn, feedback, cues if turn.index == 0 else "")
            try:
                messages.append(self._user_message(story, turn, text, image))
                with self.client.tally(model_tally):
                    response = self.client.complete(messages, temperature=self.temperature,
                                                    max_tokens=self.max_tokens)
            except CultureKBError as exc:  # an unreadable image, or the call failed after the client's retries
                failure = f"turn {turn.index + 1}: {type(exc).__name__}: {exc}"
                records.append(TurnRecord(**base, error=failure))
                break
            answer = response.text
            messages.append({"role": "assistant", "content": answer})
            if turn.text:
                shown.append(turn.text)
            verdict = self.judge.judge(JudgeRequest(
                story_id=story.id, turn=turn.index + 1, story="\n".join(shown), question=turn.question,
                answer=answer, expected=turn.expected_for(previous), wrong_answers=turn.wrong_answers,
                branches=turn.branches), judge_tally)
            records.append(TurnRecord(
                **base, answer=answer, correct=verdict.status == "ok" and verdict.correct, branch=verdict.branch,
                judge_status=verdict.status, judge_method=verdict.method, similarity=verdict.similarity,
                reason=verdict.reason, cached=response.cached, error=verdict.error))
            if verdict.status == "error":
                failure = f"turn {turn.index + 1}: the judge call failed: {verdict.error}"
                break
            previous = Outcome(records[-1].correct, verdict.branch)
        n_correct = sum(r.correct for r in records)
        story_correct = failure is None and n_correct == len(story.turns)
        return StoryPrediction(
            label=None if failure else ("correct" if story_correct else "incorrect"),
            raw="\n".join(r.answer or "" for r in records), parse_status="error" if failure else "text",
            story_status="failed" if failure else "played", error=failure, turns=records, n_correct=n_correct,
            story_correct=story_correct, cue_status=cue[1] if cue is not None else "not-used",
            tuples_used=[m.tuple.id for m in block.matches] if block is not None else [],
            model_calls=model_tally.sent, model_cached=model_tally.cached, judge_calls=judge_tally.sent,
            judge_cached=judge_tally.cached, cached=model_tally.sent == 0 and model_tally.cached > 0, **common)

    # -- scoring and report -----------------------------------------------------------------------------------------
    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Story and question accuracy per setting, per category and modality; feedback, blind and cue diagnostics;
        model and judge calls per story and question."""
        stories = [self.stories[s.id] for s in samples]
        by_key: dict[str, list[StoryPrediction]] = {}
        for setting, preds in predictions_by_setting.items():
            recs = []
            for p in preds:
                if not isinstance(p, StoryPrediction):
                    raise DataError(f"commet/{setting.key}: a checkpoint record of {p.sample_id!r} is not a story "
                                    "record; delete the run folder's predictions or run with resume=False")
                recs.append(p)
            by_key[setting.key] = recs
        return score_commet(stories, by_key, judge=self.judge.id)

    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the model, the judge (offline or a model), the orig/blind baselines, the cue KB, the images
        sent per setting."""
        header = base_run_header(self)
        settings = results.get("settings") or {}
        judge = str(results.get("judge") or self.judge.id)
        header.update({
            "model": str(self.client.id),
            "judge": judge + (f" ({results['judge_note']})" if results.get("judge_note") else ""),
            "baseline": ("orig (no cues, with images) is the reference of " +
                         ", ".join(k for k in settings if k != "orig")) if "orig" in settings and len(settings) > 1
                        else "none (only one setting ran; add blind or kb-cues to compare with orig)",
            "images sent": "; ".join(f"{k}: {v.get('turns_with_image_sent', 0)} of {v.get('turns', 0)} turns"
                                     for k, v in settings.items()) or "none (no turn played)",
        })
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """Markdown tables of the CoMMET results."""
        return commet_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """PNG plots: story and question accuracy per mental-state category and per modality."""
        return commet_plots(results)
