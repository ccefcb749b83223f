"""CulturalToM-VQA items: the file format, the task x complexity matrix, and the loader.

One question per row, in any data layout `culturekb._records` reads: JSONL, a JSON list, a JSON object keyed by
id, CSV or TSV (a header row), or a folder of such files; a public release's own keys are renamed by a field map
(``--map``; ToMBench's bilingual keys are recognised without one).

- ``id``: unique question id (default: ``<file name>:<line>``).
- ``image`` (required unless ``image_source`` is ``none``): a path relative to the file's folder (or to
  ``data_root``), or a ``file://``, ``http(s)://`` or ``data:`` URL.
- ``question`` (required).
- ``options`` (required): 2 to 26 answer texts, as a JSON list, the fields ``option_a`` .. ``option_z``, one string
  of lettered options, or written inside the question (``(a) ... (b) ...``, ``A. ... B. ...``). Absent options at
  the end (``NaN``, ``"nan"``, ``""``) are dropped; an option that repeats its own letter (``"A. ghosts"``) loses it.
- ``answer`` (required): the correct option's letter (``(B)``, ``b``, ``B. `` are accepted), its number, or its text.
- ``task``: one of the matrix's six task types (its id, name or an alias, any case); default: the file's name. A
  release read through a field map keeps its own tasks (outside the matrix; reported per task all the same).
- ``level``: complexity level 1-4 (required for a matrix task; ``n/a`` for a release's own task without one).
- ``image_source``: where the image comes from (``FindingEmo``, ``CulturalVQA``, ``CVQA``, ``WikiArt`` ...);
  default ``none`` (a text-only question) without an image.
- ``region``: region or country of the scene (a code such as ``CN``, or a name); default ``unspecified``.
- ``culture`` (optional): the culture whose view the question asks for (a culture id such as ``zh``; default:
  the region).
- ``context`` (optional): text shown before the question (a story, a caption).
- ``language`` (optional): the language of question and options (default ``en``).

Other fields are kept in the item's metadata. Every bad row of a file is reported at once (counts per kind, the
first lines of each), and nothing is loaded; ``on_bad_row="skip"`` leaves them out and lists them in the report.
Defaults filled in are counted in the load report.

The task x complexity matrix (``culturekb/data/culturaltom_matrix.json``, or a file of the same shape) lists which
(task, level) pairs exist. A question of a matrix task whose pair is not in the matrix is an **error**, not a
warning: such a pair means a mislabelled item (or a matrix from another release), and reporting accuracy per task
and level over mislabelled items would mislead. Give the other release's matrix (``matrix=`` / ``--matrix``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb._io import read_json, resolve_image_ref
from culturekb._records import FieldMap, LoadReport, Problems, Record, is_absent, read_records
from culturekb.errors import DataError
from culturekb.evals.loaders import MAX_OPTIONS, MIN_OPTIONS, OPTION_FIELDS, answer_letter, choice_options
from culturekb.kb.loaders import plain_culture_text
from culturekb.kb.schema import Sample

__all__ = ["HUMAN_ACCURACY", "MAX_OPTIONS", "MIN_OPTIONS", "N_OPTIONS", "UNSPECIFIED", "TEXT_ONLY_SOURCE",
           "TaskMatrix", "item_groups", "load_culturaltom", "load_matrix"]

HUMAN_ACCURACY = 0.983
"""Human accuracy on CulturalToM-VQA reported by the paper (the reports' reference line)."""
N_OPTIONS = 4
"""Options of a CulturalToM-VQA question as the paper has them (a release may have 2 to 26)."""
UNSPECIFIED = "unspecified"
"""The region (and image source) of an item whose file names none."""
TEXT_ONLY_SOURCE = "none"
"""The ``image_source`` of a question without an image."""

_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "question_id", "qid", "item_id"),
    "image": ("image", "image_path", "img", "image_file"),
    "question": ("question", "q"),
    "options": ("options", "choices"),
    "answer": ("answer", "answer_letter", "gold", "label", "correct"),
    "task": ("task", "task_type", "tom_task"),
    "level": ("level", "complexity", "complexity_level"),
    "image_source": ("image_source", "source", "dataset"),
    "region": ("region", "country"),
    "culture": ("culture",),
    "context": ("context", "story", "caption"),
    "language": ("language", "lang"),
}



@dataclass(frozen=True)
class TaskMatrix:
    """Which complexity levels each task type has, with the tasks' names and aliases."""

    levels: Mapping[int, str]
    tasks: Mapping[str, tuple[int, ...]]
    names: Mapping[str, str]
    aliases: Mapping[str, str]
    """Normalised alias, name or id -> task id."""
    source: str = ""

    def task_id(self, value: str) -> str | None:
        """The task id of an id, name or alias (any case, spaces/hyphens/underscores alike); None if unknown."""
        return self.aliases.get(_norm(value))

    def allows(self, task: str, level: int) -> bool:
        """Whether (task, level) is a pair of the matrix."""
        return level in self.tasks.get(task, ())

    def pairs(self) -> list[tuple[str, int]]:
        """Every (task, level) pair, in the matrix's order."""
        return [(t, lvl) for t, levels in self.tasks.items() for lvl in levels]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for reports and run configs)."""
        return {"source": self.source, "tasks": {t: list(v) for t, v in self.tasks.items()}}


def _norm(value: str) -> str:
    return re.sub(r"[\s_\-]+", " ", str(value).strip().lower())


def load_matrix(path: str | Path | None = None) -> TaskMatrix:
    """The task x complexity matrix: the packaged one, or a JSON file of the same shape (``levels``: level ->
    description; ``tasks``: id -> {``name``, ``aliases``, ``levels``})."""
    if path is None:
        where = "culturekb/data/culturaltom_matrix.json"
        raw = json.loads(resources.files("culturekb.data").joinpath("culturaltom_matrix.json").read_text("utf-8"))
    else:
        where = str(path)
        raw = read_json(path, fix="give a task x complexity matrix JSON file (see culturekb/data/"
                                  "culturaltom_matrix.json)")
    if not isinstance(raw, dict) or not isinstance(raw.get("tasks"), dict) or not raw["tasks"]:
        raise DataError(f"{where}: a task matrix needs a non-empty 'tasks' object (see culturekb/data/"
                        "culturaltom_matrix.json)")
    levels_raw = raw.get("levels", {})
    try:
        levels = {int(k): str(v) for k, v in levels_raw.items()}
    except (AttributeError, ValueError) as exc:
        raise DataError(f"{where}: 'levels' must map level numbers to descriptions") from exc
    tasks: dict[str, tuple[int, ...]] = {}
    names: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for tid, spec in raw["tasks"].items():
        if not isinstance(spec, dict) or not isinstance(spec.get("levels"), list) or not spec["levels"]:
            raise DataError(f"{where}: task {tid!r} needs a non-empty 'levels' list")
        bad = [lvl for lvl in spec["levels"] if not isinstance(lvl, int) or (levels and lvl not in levels)]
        if bad:
            raise DataError(f"{where}: task {tid!r} lists unknown levels {bad}; the levels are {sorted(levels)}")
        tasks[tid] = tuple(sorted(set(spec["levels"])))
        names[tid] = str(spec.get("name") or tid.replace("_", " "))
        for alias in (tid, names[tid], *spec.get("aliases", [])):
            key = _norm(alias)
            if aliases.get(key, tid) != tid:
                raise DataError(f"{where}: alias {alias!r} names two tasks ({aliases[key]!r} and {tid!r})")
            aliases[key] = tid
    return TaskMatrix(levels, tasks, names, aliases, where)


# -- rows -----------------------------------------------------------------------------------------------------
def _field(row: Mapping[str, Any], name: str) -> Any:
    lowered = {k.strip().lower(): k for k in row}
    for alias in _ALIASES[name]:
        if alias in lowered:
            value = row[lowered[alias]]
            return None if is_absent(value) else value
    return None


def _text(row: Mapping[str, Any], name: str, where: str, required: bool = True) -> str:
    value = _field(row, name)
    if value is None:
        if required:
            raise DataError(f"{where}: field {name!r} is missing or empty; accepted names: {list(_ALIASES[name])}")
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise DataError(f"{where}: field {name!r} must be text, got {type(value).__name__} {value!r}")
    text = value.strip()
    if required and not text:
        raise DataError(f"{where}: field {name!r} is empty")
    return text


def _level(row: Mapping[str, Any], where: str) -> int | None:
    value = _field(row, "level")
    if value is None:
        return None
    try:
        level = int(str(value).strip().lower().removeprefix("level").strip())
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: field 'level' must be a number 1-4, got {value!r}") from exc
    return level


@dataclass
class _Load:
    """What one load shares between rows: the matrix, the image root, whether the file came through a map."""

    tm: TaskMatrix
    root: Path | None
    check_images: bool
    report: LoadReport
    used: frozenset[str]


def _item(rec: Record, load: _Load) -> Sample:
    row, where, tm = rec.data, rec.where, load.tm
    released = bool(load.report.field_map)
    sid = _text(row, "id", where, required=False)
    if not sid:
        sid = rec.place_id
        load.report.defaults["id"] += 1
    task_value = _text(row, "task", where, required=False) or Path(rec.source).stem
    task = tm.task_id(task_value)
    level = _level(row, where)
    if task is None:
        if not released:
            raise DataError(f"{where}: unknown task {task_value!r}; use one of {list(tm.tasks)} (or their names "
                            f"and aliases in {tm.source}), or read a release through its field map (--map)")
        task = task_value  # a release's own task, outside the matrix: kept as given, reported as such
    elif level is None or not tm.allows(task, level):
        raise DataError(f"{where}: task {task!r} has no complexity level {level} in the task x complexity matrix "
                        f"({tm.source}: levels {list(tm.tasks[task])}); fix the item's level or task, or give "
                        "the matrix of the release the data comes from (--matrix)")
    image_ref = _text(row, "image", where, required=False)
    source = _text(row, "image_source", where, required=False)
    if not source:
        source = TEXT_ONLY_SOURCE if not image_ref else "unspecified"
        load.report.defaults["image_source"] += 1
    image: str | None = None
    if image_ref:
        image = resolve_image_ref(image_ref, where, data_root=load.root, base_dir=Path(rec.source).parent,
                                  check=load.check_images)
    elif source.lower() != TEXT_ONLY_SOURCE:
        raise DataError(f"{where}: field 'image' is empty; give the image path, or set image_source to "
                        f"{TEXT_ONLY_SOURCE!r} for a text-only question")
    region = plain_culture_text(_text(row, "region", where, required=False), where, "region")
    if not region:
        region = UNSPECIFIED
        load.report.defaults["region"] += 1
    culture = plain_culture_text(_text(row, "culture", where, required=False), where) or region
    options, question = choice_options(_field(row, "options"), row, where, _text(row, "question", where))
    if len({o.lower() for o in options}) != len(options):
        if not released:
            raise DataError(f"{where}: two options have the same text {options}; each option must differ")
        load.report.notes.append(f"{where}: two options have the same text {options} (kept as released: scored "
                                 "by letter)")
    extra = {k: v for k, v in row.items() if k.strip().lower() not in load.used and not is_absent(v)}
    return Sample(
        id=sid, culture=culture, image=image, text=_text(row, "context", where, required=False) or None,
        question=question, options=options, label=answer_letter(_text(row, "answer", where), options, where),
        metadata={**extra, "task": task, "level": level, "in_matrix": tm.task_id(task) is not None,
                  "image_source": source, "region": region,
                  "language": _text(row, "language", where, required=False) or "en", "source_line": rec.line,
                  **({"source_file": Path(rec.source).name} if Path(rec.source).name else {})},
    )


def load_culturaltom(
    path: str | Path,
    *,
    data_root: str | Path | None = None,
    check_images: bool = True,
    matrix: TaskMatrix | str | Path | None = None,
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
    report: LoadReport | None = None,
) -> list[Sample]:
    """The questions of a CulturalToM-VQA file, a folder of files, or a public release read through a field map
    (format in the module docstring) as `Sample`s.

    Each sample: `label` the answer letter, `options` the 2-26 texts, `text` the context, `culture` the culture
    field (else the region), metadata ``task``, ``level``, ``image_source``, ``region``, ``language``,
    ``source_line`` and any extra fields. `check_images`: a local image that does not exist is an error (runs that
    send no image, such as the blind run and the positivity baseline, load with it off). Every bad row is
    reported at once (`on_bad_row="fail"`), or left out and listed in `report` (``"skip"``).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"CulturalToM-VQA file {p} does not exist; give a JSONL, JSON, CSV or TSV file or a folder "
                        "of them (format: culturekb.evals.culturaltom.data)")
    report = report if report is not None else LoadReport()
    load = _Load(matrix if isinstance(matrix, TaskMatrix) else load_matrix(matrix),
                 Path(data_root) if data_root is not None else None, check_images, report,
                 frozenset({a for names in _ALIASES.values() for a in names} | set(OPTION_FIELDS)))
    problems = Problems(f"CulturalToM-VQA data {p}", on_bad_row)
    samples = problems.collect(read_records(p, field_map, report), lambda rec: _item(rec, load))
    problems.finish(report, left=len(samples))  # every row skipped as bad: raises, listing them
    if not samples:
        raise DataError(f"{p}: no questions; the file is empty")
    return samples


def _level_name(level: Any) -> str:
    return f"level {level}" if level is not None else "level n/a"


def item_groups(samples: Sequence[Sample]) -> dict[str, list[str]]:
    """Per sample (in order) the values the reports group by: task, level, task@level, image source, region."""
    return {
        "task": [str(s.metadata["task"]) for s in samples],
        "level": [_level_name(s.metadata["level"]) for s in samples],
        "task_level": [f"{s.metadata['task']}@{s.metadata['level'] if s.metadata['level'] is not None else 'n/a'}"
                       for s in samples],
        "image_source": [str(s.metadata["image_source"]) for s in samples],
        "region": [str(s.metadata["region"]) for s in samples],
    }
