"""The review ledger: every human decision on a tuple, kept beside the KB and re-applied to every build.

Where: ``<kb>.review.jsonl``, a sibling of the KB directory (``runs/kb`` -> ``runs/kb.review.jsonl``;
`ledger_path`). The KB directory is replaced whole by every save (`culturekb.kb.store.KnowledgeBase.save`), so
the ledger lives outside it: a rebuild into the same ``--out`` (or deleting the folder and building again) keeps
it. Move or copy it with the KB.

What: one JSON object per line, one line per decision, appended and fsync'd at once (the review page writes each
decision as it is made; a crash loses nothing, a line cut by a crash is skipped with a warning). A record names
the tuple (``tuple_id`` = ``culture::concept``, `culture`, `concept`), the **evidence** it was made on (a hash of
the tuple as the build made it: label, support, label counts and rationales; `evidence_of`) and the label the
reviewer saw (``label_before``), the ``decision`` (``approve``, ``reject`` or ``relabel``), the corrected
``label`` (relabel only), the ``reviewer``, the ``time`` (UTC), a ``note``, where it came from (``source``: the
page, a queue file, a Label Studio file) and the KB version it was made on.

How it applies (`apply_ledger`): per tuple, the last decision in the ledger wins. When its evidence is the
tuple's evidence, the tuple becomes ``approved`` (approve), ``approved`` with the new label (relabel) or
``rejected`` (reject; kept in the KB and never served), marked in ``provenance["review"]`` with what it was
before. When the evidence differs (the data or the build changed the tuple), the decision is **not** applied and
the tuple is listed *to re-check*; a decision whose tuple the build no longer makes is listed *gone*. The ledger
is never rewritten: a new decision on the same tuple supersedes the old one.

Several reviewers may decide the same tuples; `agreement` gives Cohen's kappa per culture between each pair
(Light's mean over pairs when more than two), over their latest decisions on the same evidence.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from culturekb._io import read_text_utf8, stable_hash
from culturekb.errors import DataError, SchemaError
from culturekb.kb.distribution import counts_of
from culturekb.kb.schema import KnowledgeTuple

if TYPE_CHECKING:
    from culturekb.kb.schemes import EmotionScheme

class KnowledgeBase(Protocol):
    """What the ledger needs of a KB (`culturekb.kb.store.KnowledgeBase` is one; named here so the ledger, below
    the store, imports nothing of it)."""

    @property
    def tuples(self) -> Sequence[KnowledgeTuple]: ...  # noqa: D102

    @property
    def version(self) -> str: ...  # noqa: D102

    @property
    def scheme(self) -> EmotionScheme: ...  # noqa: D102

    @property
    def path(self) -> Path | None: ...  # noqa: D102

    def get(self, concept: str, culture: str) -> KnowledgeTuple | None: ...  # noqa: D102

    def replace(self, tuples: Sequence[KnowledgeTuple]) -> Any: ...  # noqa: D102


KB = TypeVar("KB", bound=KnowledgeBase)
"""A KB type the ledger hands back as it was given (a store `KnowledgeBase` stays one)."""


__all__ = ["LEDGER_SUFFIX", "DECISIONS", "Decision", "DecisionError", "ReviewState", "ledger_path", "read_ledger",
           "append_decisions", "evidence_of", "built_tuple", "make_decision", "apply_ledger", "latest_decisions",
           "agreement", "review_facts", "relabelled", "reapply_ledger"]

logger = logging.getLogger(__name__)

class _Tuples(Protocol):
    """Anything with tuples (a `KnowledgeBase`, the card's `CardSource`)."""

    @property
    def tuples(self) -> Sequence[KnowledgeTuple]: ...  # noqa: D102


LEDGER_SUFFIX = ".review.jsonl"
FORMAT = 1
DECISIONS = ("approve", "reject", "relabel")
_MAX_REVIEWER = 80
_MAX_NOTE = 4000


def ledger_path(kb_dir: str | Path) -> Path:
    """The ledger of the KB at `kb_dir`: ``<kb>.review.jsonl`` beside the KB folder (see the module docstring)."""
    p = Path(kb_dir)
    if p.name in ("", ".", ".."):
        p = Path(os.path.abspath(p))
    return p.parent / f"{p.name}{LEDGER_SUFFIX}"


class Decision(BaseModel):
    """One line of the ledger (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = FORMAT
    tuple_id: str
    culture: str
    concept: str
    label_before: str
    evidence: str
    decision: Literal["approve", "reject", "relabel"]
    label: str | None = None
    reviewer: str
    time: str
    note: str = ""
    source: str = ""
    kb_version: str = ""

    @property
    def category(self) -> str:
        """What two reviewers agree or disagree on: ``approve``, ``reject`` or ``relabel:<label>``."""
        return f"relabel:{self.label}" if self.decision == "relabel" else self.decision


class DecisionError(DataError):
    """A decision that cannot be taken (unknown tuple or label, an edited cell, stale evidence); the message says
    the fix, the caller adds the file and row."""


# -- evidence --------------------------------------------------------------------------------------------------
def built_tuple(t: KnowledgeTuple) -> KnowledgeTuple:
    """`t` as the build made it: a review this ledger applied (``provenance["review"]`` with ``label_before``) is
    undone. Tuples without such a mark are returned as they are."""
    r = t.provenance.get("review")
    if not isinstance(r, Mapping) or "label_before" not in r:
        return t
    prov = {k: v for k, v in t.provenance.items() if k != "review"}
    return t.model_copy(update={"label": str(r["label_before"]), "status": r.get("status_before", "pending"),
                                "provenance": prov})


def evidence_of(t: KnowledgeTuple) -> str:
    """The hash (16 hex digits) of what a reviewer judges: the tuple as built, its label, support, label counts
    and rationales. A rebuild that changes any of them makes older decisions on the tuple *to re-check*."""
    b = built_tuple(t)
    return stable_hash({"concept": b.concept, "culture": b.culture, "label": b.label, "support": b.support,
                        "counts": counts_of(b.distribution, b.support), "rationales": list(b.rationales)})[:16]


def relabelled(t: KnowledgeTuple) -> str | None:
    """The label the build gave `t` when a reviewer relabelled it, else None."""
    r = t.provenance.get("review")
    if isinstance(r, Mapping) and r.get("decision") == "relabel" and "label_before" in r:
        return str(r["label_before"])
    return None


# -- reading and writing -----------------------------------------------------------------------------------------
def read_ledger(path: str | Path) -> list[Decision]:
    """The decisions of a ledger file, in order (none when it does not exist). A bad line raises DataError with
    the file, line and fix, except a last line cut short by a crash, which is skipped with a warning."""
    path = Path(path)
    if not path.is_file():
        return []
    text = read_text_utf8(path, fix="restore the ledger from a copy; it is the record of every review decision")
    lines = text.split("\n")
    out: list[Decision] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if isinstance(raw, dict) and isinstance(raw.get("format"), int) and raw["format"] > FORMAT:
                raise SchemaError(f"{path}, line {n}: ledger format {raw['format']} is newer than this culturekb "
                                  f"reads ({FORMAT}); upgrade culturekb")
            out.append(Decision.model_validate(raw))
        except (json.JSONDecodeError, ValidationError) as exc:
            if n == len(lines) and not text.endswith("\n"):
                logger.warning("%s, line %d: an unfinished last line (a write cut short) is skipped", path, n)
                continue
            why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise DataError(f"{path}, line {n}: not a review decision ({why}); the ledger is written by culturekb "
                            "only: restore the line from a copy or delete it (that decision is then lost)") from exc
    return out


def append_decisions(path: str | Path, decisions: Iterable[Decision]) -> int:
    """Append decisions to the ledger at once (flushed and fsync'd); returns how many were written."""
    path = Path(path)
    rows = [d.model_dump_json() + "\n" for d in decisions]
    if not rows:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with open(path, "a+b") as fh:
        data = "".join(rows).encode("utf-8")
        size = fh.seek(0, os.SEEK_END)
        if size > 0:
            fh.seek(max(0, size - 65536))
            tail = fh.read()
            if not tail.endswith(b"\n"):  # a line cut by a crash, never acknowledged: cut it off
                keep = size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else 0
                logger.warning("%s: an unfinished last line (a write cut short) is removed", path)
                fh.truncate(keep)
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    if new:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return len(rows)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def make_decision(
    kb: KnowledgeBase, tuple_id: str, decision: str, *, reviewer: str, label: str | None = None, note: str = "",
    source: str = "", evidence: str | None = None, shown: Mapping[str, str] | None = None, time: str | None = None,
) -> Decision:
    """A checked decision on a tuple of `kb`; DecisionError (no file, no row: the caller adds them) when the tuple
    or the label is unknown, a shown cell (`shown`: concept, culture, label as exported) was edited, or the
    `evidence` it was made on is not the tuple's any more."""
    culture, _, concept = str(tuple_id or "").partition("::")
    t = kb.get(concept, culture)
    if t is None:
        raise DecisionError(f"tuple {tuple_id!r} is not in the KB (version {kb.version}); the queue was exported "
                            "from another KB or the cell was edited: export the queue again from this KB")
    decision = decision.strip().lower()
    if decision not in DECISIONS:
        raise DecisionError(f"decision {decision!r} is not one of {list(DECISIONS)}; leave it empty to skip the row")
    for key, have in (("concept", t.concept), ("culture", t.culture), ("label", t.label)):
        cell = (shown or {}).get(key)
        if cell is not None and str(cell).strip() != "" and str(cell).strip() != have.strip():
            fix = ("to change the label, leave 'label' as exported, set decision to relabel and write the new label "
                   "in corrected_label" if key == "label" else "leave the tuple's cells as exported")
            raise DecisionError(f"the {key!r} cell reads {str(cell).strip()!r} but tuple {tuple_id} has {have!r}; "
                                f"{fix}")
    current = evidence_of(t)
    if evidence and evidence != current:
        raise DecisionError(f"tuple {tuple_id} changed since this decision's queue was exported (evidence "
                            f"{evidence} -> {current}: the KB was rebuilt); export the queue again and decide on "
                            "the new evidence")
    name = " ".join(str(reviewer or "").split())
    if not name or len(name) > _MAX_REVIEWER:
        raise DecisionError(f"reviewer {reviewer!r}: give a name of 1-{_MAX_REVIEWER} characters (--reviewer NAME "
                            "or the reviewer cell)")
    if len(note) > _MAX_NOTE:
        raise DecisionError(f"the note has {len(note)} characters; keep it under {_MAX_NOTE}")
    before = built_tuple(t).label
    new_label: str | None = None
    if decision == "relabel":
        if not (label or "").strip():
            raise DecisionError("decision 'relabel' needs a corrected_label (one of "
                                f"{list(kb.scheme.labels)})")
        found = kb.scheme.match(str(label))
        if found is None:
            raise DecisionError(f"unknown label {label!r} for scheme {kb.scheme.name!r}; use one of "
                                f"{list(kb.scheme.labels)} (or a listed synonym or translation)")
        if found == before:
            raise DecisionError(f"relabel to {found!r}, the label the tuple already has; use approve")
        new_label = found
    return Decision(tuple_id=t.id, culture=t.culture, concept=t.concept, label_before=before, evidence=current,
                    decision=decision, label=new_label, reviewer=name, time=time or _now(), note=note.strip(),  # type: ignore[arg-type]
                    source=source, kb_version=kb.version)


# -- applying ------------------------------------------------------------------------------------------------------
def latest_decisions(decisions: Iterable[Decision], reviewer: str | None = None) -> dict[str, Decision]:
    """The last decision per tuple (of one `reviewer`, or of anyone)."""
    out: dict[str, Decision] = {}
    for d in decisions:
        if reviewer is None or d.reviewer == reviewer:
            out[d.tuple_id] = d
    return out


@dataclass
class ReviewState:
    """What applying a ledger did: decisions applied per kind, and those not applied (to re-check, gone)."""

    applied: Counter[str] = field(default_factory=Counter)
    to_recheck: list[dict[str, Any]] = field(default_factory=list)
    gone: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts and the tuples to re-check and gone (with the decision and why)."""
        return {"applied": dict(self.applied), "to_recheck": self.to_recheck, "gone": self.gone}


def _reviewed(b: KnowledgeTuple, d: Decision) -> KnowledgeTuple:
    mark = {"decision": d.decision, "label_before": b.label, "status_before": b.status, "reviewer": d.reviewer,
            "time": d.time, "evidence": d.evidence}
    update: dict[str, Any] = {"status": "rejected" if d.decision == "reject" else "approved",
                              "provenance": {**b.provenance, "review": mark}}
    if d.decision == "relabel" and d.label:
        update["label"] = d.label
    return b.model_copy(update=update)


def _entry(d: Decision, reason: str) -> dict[str, Any]:
    return {"tuple_id": d.tuple_id, "decision": d.decision, "label": d.label, "reviewer": d.reviewer,
            "time": d.time, "reason": reason}


def apply_ledger(kb: KB, decisions: Sequence[Decision]) -> tuple[KB, ReviewState]:
    """`kb` with the ledger's decisions applied (see the module docstring) and what was (not) applied. Reviews
    applied before are undone first, so applying twice gives the same KB. Returns `kb` itself when nothing
    changes."""
    latest = latest_decisions(decisions)
    state = ReviewState()
    out: list[KnowledgeTuple] = []
    ids = set()
    for t in kb.tuples:
        b = built_tuple(t)
        ids.add(b.id)
        d = latest.get(b.id)
        if d is None:
            out.append(b)
            continue
        if d.evidence != evidence_of(b):
            state.to_recheck.append(_entry(d, "the tuple's evidence changed since the decision"))
            out.append(b)
        elif d.decision == "relabel" and d.label not in kb.scheme.labels:
            state.to_recheck.append(_entry(d, f"label {d.label!r} is not in the KB's scheme"))
            out.append(b)
        else:
            state.applied[d.decision] += 1
            out.append(_reviewed(b, d))
    state.gone = [_entry(d, "the build no longer makes this tuple") for tid, d in latest.items() if tid not in ids]
    if [t.model_dump() for t in out] == [t.model_dump() for t in kb.tuples]:
        return kb, state
    new = kb.replace(out)
    new.path = kb.path
    return new, state


# -- agreement and counts ------------------------------------------------------------------------------------------
def _kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa (None for no items; 1.0 when both raters give the one same category)."""
    if not a:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0
    from sklearn.metrics import cohen_kappa_score

    return round(float(cohen_kappa_score(list(a), list(b))), 4)


def agreement(kb: _Tuples, decisions: Sequence[Decision]) -> dict[str, Any]:
    """Inter-reviewer agreement over each reviewer's latest decision on the tuples' current evidence: per culture
    and overall, Cohen's kappa between two reviewers (Light's mean over pairs for more), the tuples two or more
    reviewers decided, and the share of those pairs that agree. Empty when no two reviewers share a tuple."""
    current = {t.id: evidence_of(t) for t in kb.tuples}
    by_reviewer: dict[str, dict[str, Decision]] = defaultdict(dict)
    for d in decisions:
        if current.get(d.tuple_id) == d.evidence:
            by_reviewer[d.reviewer][d.tuple_id] = d
    names = sorted(by_reviewer)
    culture_of = {t.id: t.culture for t in kb.tuples}

    def figure(tuples: set[str]) -> dict[str, Any] | None:
        kappas, shared, agree, pairs = [], set(), 0, 0
        for i, r1 in enumerate(names):
            for r2 in names[i + 1:]:
                common = sorted(tuples & set(by_reviewer[r1]) & set(by_reviewer[r2]))
                if not common:
                    continue
                a = [by_reviewer[r1][t].category for t in common]
                b = [by_reviewer[r2][t].category for t in common]
                k = _kappa(a, b)
                if k is not None:
                    kappas.append(k)
                shared.update(common)
                agree += sum(x == y for x, y in zip(a, b, strict=True))
                pairs += len(common)
        if not pairs:
            return None
        return {"kappa": round(sum(kappas) / len(kappas), 4) if kappas else None, "tuples": len(shared),
                "agreement": round(agree / pairs, 4),
                "reviewers": sorted({r for r in names if set(by_reviewer[r]) & shared})}

    per_culture = {}
    for c in sorted(set(culture_of.values())):
        f = figure({tid for tid, cc in culture_of.items() if cc == c})
        if f is not None:
            per_culture[c] = f
    overall = figure(set(culture_of))
    return {"overall": overall, "per_culture": per_culture} if overall else {}


def review_facts(kb: _Tuples, decisions: Sequence[Decision]) -> dict[str, Any]:
    """What the card, `kb info`, ``/v1/kb`` and the notebook say of the review: tuples approved as they were,
    relabelled, rejected (from the KB), decisions to re-check, gone and not yet applied (from the ledger), the
    reviewers and their agreement."""
    counts = Counter(t.status for t in kb.tuples)
    n_relabelled = sum(relabelled(t) is not None for t in kb.tuples)
    latest = latest_decisions(decisions)
    by_id = {t.id: t for t in kb.tuples}
    recheck, gone, unapplied = [], 0, 0
    for tid, d in latest.items():
        t = by_id.get(tid)
        if t is None:
            gone += 1
        elif evidence_of(t) != d.evidence:
            recheck.append(tid)
        else:
            mark = t.provenance.get("review")
            if not (isinstance(mark, Mapping) and mark.get("decision") == d.decision
                    and (d.decision != "relabel" or t.label == d.label)):
                unapplied += 1
    return {
        "approved": counts.get("approved", 0) - n_relabelled, "relabelled": n_relabelled,
        "rejected": counts.get("rejected", 0), "to_recheck": len(recheck), "to_recheck_tuples": sorted(recheck),
        "gone": gone, "not_applied": unapplied, "decisions": len(decisions),
        "reviewers": sorted({d.reviewer for d in decisions}), "agreement": agreement(kb, decisions),
    }


def reapply_ledger(kb: KB, kb_dir: str | Path | None) -> tuple[KB, dict[str, Any]]:
    """What every build does before it saves into `kb_dir`: the ledger beside it applied (see `apply_ledger`);
    the state says which decisions were applied, which are to re-check and which are gone ({} without a
    directory or a ledger)."""
    if kb_dir is None or not ledger_path(kb_dir).is_file():
        return kb, {}
    new, state = apply_ledger(kb, read_ledger(ledger_path(kb_dir)))
    if state.to_recheck or state.gone:
        logger.warning("review ledger %s: %d decision(s) to re-check (their tuples' evidence changed), %d gone; "
                       "see the build report's 'review' section or `culturekb review serve`", ledger_path(kb_dir),
                       len(state.to_recheck), len(state.gone))
    return new, {"ledger": str(ledger_path(kb_dir)), **state.to_dict()}
