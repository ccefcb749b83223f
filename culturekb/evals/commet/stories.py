"""StoryTurns: CoMMET's multi-turn theory-of-mind stories, their JSONL format and its loader.

One JSON object per line is one story (PAPERS.md section 5); ``docs/commet.md`` has the full description::

    {"id": "fb-01", "culture": "zh", "modality": "text-complete", "category": "belief",
     "turns": [
       {"text": "Xiaogang and Xiaoming see a handbag ...", "question": "Where is the cabbage now?",
        "answer": "in the backpack; backpack", "wrong_answers": "handbag; briefcase"},
       {"feedback": {"right": "Correct.", "wrong": "Not quite: it is in the backpack now."},
        "question": "Where will Xiaoming look for it?", "answer": "in the handbag; handbag",
        "category": "belief"}]}

Story fields: ``id`` (unique), ``turns`` (a non-empty list), ``culture`` (optional; the culture whose cues the
``kb-cues`` setting adds), ``modality`` (``text-complete`` or ``image-dependent``; default: image-dependent when a
turn has an image), ``category`` (the default mental-state category of the turns), ``source`` and ``metadata``
(kept as they are).

Turn fields: ``question`` (required); ``text`` (the next part of the story, may be empty); ``image`` (a path
relative to the data root or the file's folder, or a URL); ``answer``: the expected answer, alternatives separated
by ``;`` (or a list); ``wrong_answers``: answers known to be wrong (optional; they help the judges);
``branches``: named answer classes, ``{"name": {"answers": "a; b", "correct": true}}``: the judge says which one
an answer matched, and the next turn can react to it; ``feedback`` (not on the first turn): a text, or texts keyed
by what the previous answer was; ``category``: one of `CATEGORIES`.

Keyed texts (``feedback``, and ``answer`` after the first turn) are chosen by the previous turn's outcome: the key
of the branch the previous answer matched when there is one, else ``right`` or ``wrong``, else ``any``. Every
keyed text must cover both outcomes (``right`` and ``wrong``, or ``any``); branch keys must be branches of the
previous turn. A bad row raises DataError naming the file, the line, the story and the turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb._io import resolve_image_ref
from culturekb._records import FieldMap, LoadReport, Problems, Record, is_absent, read_records
from culturekb.errors import DataError
from culturekb.evals.loaders import answer_letter, choice_options
from culturekb.inference.choices import option_letters
from culturekb.kb.loaders import plain_culture_text
from culturekb.kb.schema import Sample

__all__ = [
    "CATEGORIES",
    "MODALITIES",
    "OUTCOME_KEYS",
    "Branch",
    "Outcome",
    "Turn",
    "Story",
    "load_story_turns",
    "split_alternatives",
    "story_samples",
]

CATEGORIES: tuple[str, ...] = ("belief", "emotion", "intention", "desire", "percept", "combinations",
                               "non-literal communication", "moral reasoning")
"""CoMMET's mental-state categories (PAPERS.md section 5)."""
MODALITIES: tuple[str, ...] = ("text-complete", "image-dependent")
OUTCOME_KEYS: tuple[str, ...] = ("right", "wrong", "any")
"""Keys of feedback and expected answers that depend on whether the previous answer was judged right."""

_STORY_FIELDS = ("id", "turns", "culture", "modality", "category", "source", "metadata")
_QUESTION_FIELDS = frozenset({"id", "question", "options", "answer", "context", "story", "image", "culture",
                              *(f"option_{c}" for c in "abcdefghijklmnopqrstuvwxyz")})
_TURN_FIELDS = ("text", "question", "image", "answer", "wrong_answers", "branches", "feedback", "category")


@dataclass(frozen=True)
class Outcome:
    """What the judge made of one answer: right or wrong, and the branch it matched (if the turn has branches)."""

    correct: bool
    branch: str | None = None


def resolve_key(keys: Sequence[str] | Mapping[str, Any], previous: Outcome | None) -> str | None:
    """The key a keyed text is read under after `previous`: its branch, else right/wrong, else any; None when
    none of these is a key (or there is no previous answer and no ``any``)."""
    if previous is not None:
        if previous.branch is not None and previous.branch in keys:
            return previous.branch
        side = "right" if previous.correct else "wrong"
        if side in keys:
            return side
    return "any" if "any" in keys else None


@dataclass(frozen=True)
class Branch:
    """A named class of answers to one question (`answers`: its alternatives) and whether it counts as right."""

    name: str
    answers: tuple[str, ...]
    correct: bool


@dataclass(frozen=True)
class Turn:
    """One turn of a story: feedback on the previous answer, the next part of the story, a question."""

    index: int
    """0-based position in the story."""
    question: str
    category: str
    text: str = ""
    image: str | None = None
    answers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Expected answers (alternatives) by outcome key; ``{"any": ...}`` for answers that do not depend on it."""
    wrong_answers: tuple[str, ...] = ()
    branches: tuple[Branch, ...] = ()
    feedback: Mapping[str, str] = field(default_factory=dict)
    """Feedback texts by outcome key; empty on the first turn and when the story gives none."""

    def feedback_for(self, previous: Outcome | None) -> tuple[str, str]:
        """(key, text) of the feedback shown after `previous`; ("", "") when this turn has none."""
        key = resolve_key(self.feedback, previous)
        return ("", "") if key is None else (key, self.feedback[key])

    def expected_for(self, previous: Outcome | None) -> tuple[str, ...]:
        """Every right answer after `previous`: the expected answers of its key and the right branches'."""
        key = resolve_key(self.answers, previous)
        own = self.answers[key] if key is not None else ()
        extra = [a for b in self.branches if b.correct for a in b.answers]
        return tuple(dict.fromkeys([*own, *extra]))

    def branch(self, name: str | None) -> Branch | None:
        """The branch called `name` (None for None or an unknown name)."""
        return next((b for b in self.branches if b.name == name), None)


@dataclass(frozen=True)
class Story:
    """One StoryTurn: an id, its turns, the culture its cues come from, modality and mental-state category."""

    id: str
    turns: tuple[Turn, ...]
    culture: str = ""
    modality: str = "text-complete"
    category: str = "combinations"
    """The story's category: its turns' when they agree, else ``combinations`` (or as the story gives it)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def image_dependent(self) -> bool:
        """True for stories whose images are needed to answer (the blind run plays these without images)."""
        return self.modality == "image-dependent"

    def to_sample(self) -> Sample:
        """The runner's item for this story: its first turn's text, question and image, its culture and metadata."""
        first = self.turns[0]
        return Sample(id=self.id, culture=self.culture, text=first.text or None, question=first.question,
                      image=first.image,
                      metadata={**self.metadata, "modality": self.modality, "category": self.category,
                                "n_turns": len(self.turns)})


def split_alternatives(value: Any, where: str, name: str) -> tuple[str, ...]:
    """Alternatives of an answer field: a string split at ``;`` or a list of strings; empty parts dropped."""
    if isinstance(value, str):
        parts = value.split(";")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        parts = [p for v in value for p in v.split(";")]
    else:
        raise DataError(f"{where}: {name} must be a string (alternatives separated by ';') or a list of strings, got "
                        f"{type(value).__name__} {value!r}")
    return tuple(dict.fromkeys(p.strip() for p in parts if p.strip()))


def _text(value: Any, where: str, name: str, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise DataError(f"{where}: {name} must be a string, got {type(value).__name__} {value!r}")
    if required and not value.strip():
        raise DataError(f"{where}: {name} is missing or empty; every turn asks a question")
    return value.strip()


def normalise_category(value: Any, where: str) -> str:
    """A mental-state category in its canonical form (case, '-', '_' ignored); DataError naming the valid ones."""
    key = " ".join(str(value).strip().lower().replace("_", " ").replace("-", " ").split())
    aliases = {"non literal communication": "non-literal communication", "non literal": "non-literal communication",
               "nonliteral communication": "non-literal communication", "moral": "moral reasoning",
               "perception": "percept", "combination": "combinations"}
    key = aliases.get(key, key)
    if key not in CATEGORIES:
        raise DataError(f"{where}: unknown mental-state category {value!r}; use one of {list(CATEGORIES)}")
    return key


def _modality(value: Any, where: str) -> str:
    key = str(value).strip().lower().replace("_", "-").replace(" ", "-")
    key = {"text": "text-complete", "image": "image-dependent"}.get(key, key)
    if key not in MODALITIES:
        raise DataError(f"{where}: unknown modality {value!r}; use one of {list(MODALITIES)}")
    return key


def _check_keys(keys: Sequence[str], where: str, name: str, previous: Turn | None) -> None:
    """A keyed text's keys are outcome keys or the previous turn's branches, and cover right and wrong."""
    if previous is None:
        raise DataError(f"{where}: {name} is keyed by the previous answer, but the first turn has no previous "
                        f"answer; give the first turn's {name} as plain text")
    allowed = [*OUTCOME_KEYS, *(b.name for b in previous.branches)]
    unknown = [k for k in keys if k not in allowed]
    if unknown:
        raise DataError(f"{where}: {name} has keys {unknown} that are neither outcomes nor branches of the previous "
                        f"turn; use {allowed}")
    if "any" not in keys and not {"right", "wrong"} <= set(keys):
        raise DataError(f"{where}: {name} must cover both outcomes of the previous answer: give 'right' and "
                        f"'wrong', or 'any' (it has {list(keys)})")


def _branches(value: Any, where: str) -> tuple[Branch, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise DataError(f"{where}: branches must be an object {{name: {{\"answers\": \"a; b\", \"correct\": "
                        f"true|false}}}}, got {value!r}")
    out = []
    for name, spec in value.items():
        at = f"{where}, branch {name!r}"
        if not name.strip() or name in OUTCOME_KEYS:
            raise DataError(f"{at}: a branch name must be non-empty and not one of {list(OUTCOME_KEYS)}")
        if not isinstance(spec, dict) or set(spec) - {"answers", "correct"} or not isinstance(spec.get("correct"),
                                                                                                bool):
            raise DataError(f"{at}: expected {{\"answers\": \"a; b\", \"correct\": true|false}}, got {spec!r}")
        answers = split_alternatives(spec.get("answers"), at, "answers")
        if not answers:
            raise DataError(f"{at}: the branch has no answers")
        out.append(Branch(name, answers, spec["correct"]))
    return tuple(out)


def _answers(value: Any, where: str, previous: Turn | None) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if isinstance(value, dict):
        _check_keys(list(value), where, "answer", previous)
        out = {k: split_alternatives(v, f"{where}, answer[{k!r}]", "answer") for k, v in value.items()}
        empty = [k for k, v in out.items() if not v]
        if empty:
            raise DataError(f"{where}: answer has no alternatives under {empty}")
        return out
    alternatives = split_alternatives(value, where, "answer")
    if not alternatives:
        raise DataError(f"{where}: answer is empty; give the expected answer (alternatives separated by ';')")
    return {"any": alternatives}


def _feedback(value: Any, where: str, previous: Turn | None) -> dict[str, str]:
    if value is None or value == "":
        return {}
    if previous is None:
        raise DataError(f"{where}: the first turn cannot have feedback (there is no previous answer); move it into "
                        "the turn's text")
    if isinstance(value, str):
        return {"any": value.strip()}
    if not isinstance(value, dict):
        raise DataError(f"{where}: feedback must be a text or an object keyed by outcome, got {value!r}")
    _check_keys(list(value), where, "feedback", previous)
    return {k: _text(v, where, f"feedback[{k!r}]") for k, v in value.items()}


def _turn(raw: Any, index: int, where: str, previous: Turn | None, default_category: str | None,
          image_ctx: tuple[Path | None, Path, bool]) -> Turn:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a turn must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_TURN_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown turn fields {unknown}; a turn has {list(_TURN_FIELDS)}")
    if raw.get("category") is None and default_category is None:
        raise DataError(f"{where}: no mental-state category; give the turn (or the story) a category, one of "
                        f"{list(CATEGORIES)}")
    category = (normalise_category(raw["category"], where) if raw.get("category") is not None
                else str(default_category))
    branches = _branches(raw.get("branches"), where)
    answers = _answers(raw.get("answer"), where, previous)
    if not answers and not any(b.correct for b in branches):
        raise DataError(f"{where}: no expected answer; give 'answer' (alternatives separated by ';') or a branch "
                        "with \"correct\": true")
    image_ref = _text(raw.get("image"), where, "image")
    data_root, base_dir, check = image_ctx
    image = resolve_image_ref(image_ref, where, data_root=data_root, base_dir=base_dir, check=check) if image_ref \
        else None
    return Turn(index=index, question=_text(raw.get("question"), where, "question", required=True),
                category=category, text=_text(raw.get("text"), where, "text"), image=image, answers=answers,
                wrong_answers=(split_alternatives(raw["wrong_answers"], where, "wrong_answers")
                               if raw.get("wrong_answers") is not None else ()),
                branches=branches, feedback=_feedback(raw.get("feedback"), where, previous))


def _story(obj: dict[str, Any], where: str, image_ctx: tuple[Path | None, Path, bool]) -> Story:
    sid = obj.get("id")
    if isinstance(sid, int) and not isinstance(sid, bool):
        sid = str(sid)
    if not isinstance(sid, str) or not sid.strip():
        raise DataError(f"{where}: the story has no 'id'; give each story a unique id")
    where = f"{where}, story {sid!r}"
    unknown = sorted(set(obj) - set(_STORY_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown story fields {unknown}; a story has {list(_STORY_FIELDS)} (put anything "
                        "else under 'metadata')")
    turns_raw = obj.get("turns")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise DataError(f"{where}: 'turns' must be a non-empty list of turns")
    default_category = normalise_category(obj["category"], where) if obj.get("category") is not None else None
    turns: list[Turn] = []
    for i, raw in enumerate(turns_raw):
        turns.append(_turn(raw, i, f"{where}, turn {i + 1}", turns[-1] if turns else None, default_category,
                           image_ctx))
    has_image = any(t.image for t in turns)
    modality = _modality(obj["modality"], where) if obj.get("modality") is not None else (
        "image-dependent" if has_image else "text-complete")
    if modality == "image-dependent" and not has_image:
        raise DataError(f"{where}: the story is image-dependent but no turn has an image; add the image or mark it "
                        "text-complete")
    cats = {t.category for t in turns}
    category = default_category or (cats.pop() if len(cats) == 1 else "combinations")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DataError(f"{where}: 'metadata' must be an object, got {type(metadata).__name__}")
    if obj.get("source") is not None:
        metadata = {**metadata, "source": obj["source"]}
    culture = obj.get("culture") or ""
    if not isinstance(culture, str):
        raise DataError(f"{where}: 'culture' must be a string such as 'zh' or 'SG', got {culture!r}")
    return Story(id=sid.strip(), turns=tuple(turns), culture=plain_culture_text(culture, where), modality=modality,
                 category=category,
                 metadata=metadata)


def _question_story(rec: Record, report: LoadReport) -> dict[str, Any]:
    """A multiple-choice (or open) question row of a release, as a one-turn story: the story text is the row's
    context, the question lists its options, the expected answer is the right option's letter and text, the
    other options are known wrong answers; the category is the row's ability or task when it names a CoMMET
    category, else ``combinations``."""
    row, where = rec.data, rec.where
    lowered = {k.strip().lower(): v for k, v in row.items() if not is_absent(v)}
    question = str(lowered.get("question") or "").strip()
    if not question:
        raise DataError(f"{where}: neither 'turns' (a story) nor 'question' (a question row); give one of them")
    options, question = ([], question) if not (lowered.get("options") or lowered.get("option_a")) else \
        choice_options(lowered.get("options"), lowered, where, question)
    raw_answer = str(lowered.get("answer") or "").strip()
    if not raw_answer:
        raise DataError(f"{where}: the question has no 'answer'")
    if options:
        letter = answer_letter(raw_answer, options, where)
        right = options[option_letters(len(options)).index(letter)]
        listed = "\n".join(f"{x}. {o}" for x, o in zip(option_letters(len(options)), options, strict=True))
        question = f"{question}\n{listed}\nAnswer with the letter of the right option."
        answer, wrong = f"{letter}; {right}", [o for o in options if o != right]
    else:
        answer, wrong = raw_answer, []
    sid = str(lowered.get("id") or rec.place_id)
    if not lowered.get("id"):
        report.defaults["id"] += 1
    words = f"{lowered.get('ability') or ''} {lowered.get('category') or ''} {lowered.get('task') or ''}".lower()
    category = next((c for c in CATEGORIES if c in words), "combinations")
    turn: dict[str, Any] = {"text": str(lowered.get("context") or lowered.get("story") or ""),
                            "question": question, "answer": answer}
    if wrong:
        turn["wrong_answers"] = wrong
    if lowered.get("image"):
        turn["image"] = lowered["image"]
    keep = {k: v for k, v in row.items() if k.strip().lower() not in _QUESTION_FIELDS and not is_absent(v)}
    return {"id": sid, "turns": [turn], "category": category, "culture": str(lowered.get("culture") or ""),
            "source": Path(rec.source).name, "metadata": keep}


def load_story_turns(path: str | Path, *, data_root: str | Path | None = None, check_images: bool = True,
                     field_map: FieldMap | None = None, on_bad_row: str = "fail", report: LoadReport | None = None
                     ) -> list[Story]:
    """The stories of a StoryTurns file (JSONL, a JSON list or object, or a folder of files), in file order; see
    the module docstring. A row that is one question (a release such as ToMBench: context, question, options,
    answer) is played as a one-turn story.

    Image paths resolve under `data_root`, else the file's folder; with `check_images`, a missing local image is an
    error. Every bad row is reported at once, naming the file, the line, the story and the turn (or left out and
    listed in `report` with ``on_bad_row="skip"``).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"StoryTurns file {p} does not exist; give the path of a JSONL file with one story per line")
    report = report if report is not None else LoadReport()
    problems = Problems(f"StoryTurns data {p}", on_bad_row)
    root = Path(data_root) if data_root is not None else None

    def story(rec: Record) -> Story:
        obj = rec.data if "turns" in rec.data else _question_story(rec, report)
        return _story(obj, rec.where, (root, Path(rec.source).parent, check_images))

    stories = problems.collect(read_records(p, field_map, report), story, "story id")
    problems.finish(report, left=len(stories))
    if not stories:
        raise DataError(f"{p}: no stories; the file must hold one story (a JSON object) per line")
    return stories


def story_samples(stories: Sequence[Story]) -> list[Sample]:
    """The runner's items, one per story (`Story.to_sample`)."""
    return [s.to_sample() for s in stories]
