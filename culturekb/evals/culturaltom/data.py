"""CulturalToM-VQA items: the file format, the task x complexity matrix, and the loader.

One question per row, JSONL (or a ``.json`` list) or TSV (a header row, tab-separated):

- ``id`` (required): unique question id.
- ``image`` (required unless ``image_source`` is ``none``): a path relative to the file's folder (or to
  ``data_root``), or a ``file://``, ``http(s)://`` or ``data:`` URL.
- ``question`` (required).
- ``options`` (required): four answer texts, as a JSON list (JSONL) or the fields ``option_a`` .. ``option_d``.
- ``answer`` (required): the correct option's letter, A-D (``(B)`` and ``b`` are accepted).
- ``task`` (required): one of the matrix's six task types (its id, name or an alias, any case).
- ``level`` (required): complexity level 1-4.
- ``image_source`` (required): where the image comes from (``FindingEmo``, ``CulturalVQA``, ``CVQA``,
  ``WikiArt`` ...); ``none`` for a text-only question.
- ``region`` (required): region or country of the scene (a code such as ``CN``, or a name).
- ``culture`` (optional): the culture whose view the question asks for (a culture id such as ``zh``; default:
  the region).
- ``context`` (optional): text shown before the question (a story, a caption).
- ``language`` (optional): the language of question and options (default ``en``).

Other fields are kept in the item's metadata. A bad row raises `DataError` naming the file, the line and the fix;
nothing is loaded from a file with a bad row.

The task x complexity matrix (``culturekb/data/culturaltom_matrix.json``, or a file of the same shape) lists which
(task, level) pairs exist. A question whose pair is not in the matrix is an **error**, not a warning: such a pair
means a mislabelled item (or a matrix from another release), and reporting accuracy per task and level over
mislabelled items would mislead. Give the other release's matrix (``matrix=`` / ``--matrix``) instead.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb._io import iter_json_records, read_json, read_text_utf8, resolve_image_ref
from culturekb.errors import DataError
from culturekb.inference.choices import option_letters
from culturekb.kb.schema import Sample

__all__ = ["HUMAN_ACCURACY", "N_OPTIONS", "TEXT_ONLY_SOURCE", "TaskMatrix", "item_groups", "load_culturaltom",
           "load_matrix"]

HUMAN_ACCURACY = 0.983
"""Human accuracy on CulturalToM-VQA reported by the paper (the reports' reference line)."""
N_OPTIONS = 4
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
_OPTION_FIELDS = tuple(f"option_{c}" for c in "abcd")


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


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() in (".tsv", ".tab"):
        lines = read_text_utf8(path).splitlines()
        reader = csv.DictReader(lines, delimiter="\t")
        if not reader.fieldnames:
            raise DataError(f"{path}: empty TSV file; the first line must name the columns")
        for i, row in enumerate(reader, start=2):
            if None in row:
                raise DataError(f"{path}, line {i}: more cells than the {len(reader.fieldnames)} columns of the "
                                "header; a tab inside a text must be removed")
            yield i, dict(row)
        return
    yield from iter_json_records(path)


def _field(row: Mapping[str, Any], name: str) -> Any:
    lowered = {k.strip().lower(): k for k in row}
    for alias in _ALIASES[name]:
        if alias in lowered:
            value = row[lowered[alias]]
            return None if value == "" else value
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


def _options(row: Mapping[str, Any], where: str) -> list[str]:
    value = _field(row, "options")
    if value is None:
        lowered = {k.strip().lower(): v for k, v in row.items()}
        if all(f in lowered for f in _OPTION_FIELDS):
            value = [lowered[f] for f in _OPTION_FIELDS]
        else:
            raise DataError(f"{where}: no options; give 'options' (a list of {N_OPTIONS} texts) or the fields "
                            f"{list(_OPTION_FIELDS)}")
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:  # bad JSON, nesting too deep, an over-long integer
            raise DataError(f"{where}: 'options' is not a JSON list ({str(exc)[:200]})") from exc
    if not isinstance(value, list) or len(value) != N_OPTIONS:
        got = len(value) if isinstance(value, list) else type(value).__name__
        raise DataError(f"{where}: 'options' must hold exactly {N_OPTIONS} answer texts, got {got}")
    out = []
    for i, opt in enumerate(value):
        if not isinstance(opt, str | int | float) or isinstance(opt, bool) or not str(opt).strip():
            raise DataError(f"{where}: option {option_letters(N_OPTIONS)[i]} is empty or not text ({opt!r})")
        out.append(str(opt).strip())
    if len({o.lower() for o in out}) != len(out):
        raise DataError(f"{where}: two options have the same text {out}; each option must differ")
    return out


def _answer(row: Mapping[str, Any], where: str) -> str:
    raw = _text(row, "answer", where).strip("()[] .").upper()
    letters = option_letters(N_OPTIONS)
    if raw not in letters:
        raise DataError(f"{where}: answer {raw!r} is not one of the option letters {list(letters)}")
    return raw


def _level(row: Mapping[str, Any], where: str) -> int:
    value = _field(row, "level")
    try:
        level = int(str(value).strip().lower().removeprefix("level").strip())
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: field 'level' must be a number 1-4, got {value!r}") from exc
    return level


def load_culturaltom(
    path: str | Path,
    *,
    data_root: str | Path | None = None,
    check_images: bool = True,
    matrix: TaskMatrix | str | Path | None = None,
) -> list[Sample]:
    """The questions of one CulturalToM-VQA file (format in the module docstring) as `Sample`s.

    Each sample: `label` the answer letter, `options` the four texts, `text` the context, `culture` the
    culture field (else the region), metadata ``task``, ``level``, ``image_source``, ``region``, ``language``,
    ``source_line`` and any extra fields. `check_images`: a local image that does not exist is an error (runs that
    send no image, such as the blind run and the positivity baseline, load with it off).
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"CulturalToM-VQA file {p} does not exist; give a JSONL or TSV file (format: "
                        "culturekb.evals.culturaltom.data)")
    tm = matrix if isinstance(matrix, TaskMatrix) else load_matrix(matrix)
    root = Path(data_root) if data_root is not None else None
    used = {a for names in _ALIASES.values() for a in names} | set(_OPTION_FIELDS)
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for line, row in _rows(p):
        where = f"{p}, line {line}"
        sid = _text(row, "id", where)
        if sid in seen:
            raise DataError(f"{where}: id {sid!r} was already used on line {seen[sid]}; ids must be unique")
        seen[sid] = line
        task_value = _text(row, "task", where)
        task = tm.task_id(task_value)
        if task is None:
            raise DataError(f"{where}: unknown task {task_value!r}; use one of {list(tm.tasks)} (or their names "
                            f"and aliases in {tm.source})")
        level = _level(row, where)
        if not tm.allows(task, level):
            raise DataError(f"{where}: task {task!r} has no complexity level {level} in the task x complexity matrix "
                            f"({tm.source}: levels {list(tm.tasks[task])}); fix the item's level or task, or give "
                            "the matrix of the release the data comes from (--matrix)")
        source = _text(row, "image_source", where)
        image_ref = _text(row, "image", where, required=False)
        image: str | None = None
        if image_ref:
            image = resolve_image_ref(image_ref, where, data_root=root, base_dir=p.parent, check=check_images)
        elif source.lower() != TEXT_ONLY_SOURCE:
            raise DataError(f"{where}: field 'image' is empty; give the image path, or set image_source to "
                            f"{TEXT_ONLY_SOURCE!r} for a text-only question")
        region = _text(row, "region", where)
        culture = _text(row, "culture", where, required=False) or region
        extra = {k: v for k, v in row.items() if k.strip().lower() not in used}
        samples.append(Sample(
            id=sid, culture=culture, image=image, text=_text(row, "context", where, required=False) or None,
            question=_text(row, "question", where), options=_options(row, where), label=_answer(row, where),
            metadata={**extra, "task": task, "level": level, "image_source": source, "region": region,
                      "language": _text(row, "language", where, required=False) or "en", "source_line": line},
        ))
    if not samples:
        raise DataError(f"{p}: no questions; the file is empty")
    return samples


def item_groups(samples: Sequence[Sample]) -> dict[str, list[str]]:
    """Per sample (in order) the values the reports group by: task, level, task@level, image source, region."""
    return {
        "task": [str(s.metadata["task"]) for s in samples],
        "level": [f"level {s.metadata['level']}" for s in samples],
        "task_level": [f"{s.metadata['task']}@{s.metadata['level']}" for s in samples],
        "image_source": [str(s.metadata["image_source"]) for s in samples],
        "region": [str(s.metadata["region"]) for s in samples],
    }
