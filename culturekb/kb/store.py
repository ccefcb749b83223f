"""`KnowledgeBase`: a directory with `manifest.json` and `tuples.jsonl`, saved atomically and versioned by content."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import shutil
import socket
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from culturekb._io import (
    atomic_dir,
    atomic_write_json,
    atomic_write_text,
    read_text_utf8,
    stable_hash,
    write_jsonl,
)
from culturekb.errors import DataError, SchemaError
from culturekb.kb._checkpoints import kill_point
from culturekb.kb.card import CARD, card_text, with_card  # not versioned: editing the card changes no version
from culturekb.kb.cultures import Culture, CultureRegistry, default_registry
from culturekb.kb.schema import SCHEMA_VERSION, KnowledgeTuple, Manifest
from culturekb.kb.schemes import EmotionScheme, get_scheme

__all__ = ["KnowledgeBase", "check_kb_target", "kb_writer", "write_card", "MANIFEST", "TUPLES", "read_manifest",
           "manifest_scheme", "manifest_cultures", "manifest_digest", "versioned_config"]

MANIFEST = "manifest.json"
TUPLES = "tuples.jsonl"

logger = logging.getLogger(__name__)


_WRITER = ".writer"
"""Inside a KB's temporary directory while it is written: "<pid> <host>" of the writing process."""
_STALE_UNKNOWN_S = 3600.0
"""A temporary directory with no live writer stamp (killed before it was written) is stale after this long."""


def _writer_stamp() -> str:
    return f"{os.getpid()} {socket.gethostname()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def _is_stale(tmp: Path) -> bool:
    """A KB temporary directory whose writer is gone: its stamp names a dead process on this host, or, without a
    stamp (or from another host), it has not changed for an hour."""
    try:
        stamp = (tmp / _WRITER).read_text(encoding="utf-8").split()
    except OSError:
        stamp = []
    if len(stamp) == 2 and stamp[0].isdigit() and stamp[1] == socket.gethostname():
        return int(stamp[0]) != os.getpid() and not _pid_alive(int(stamp[0]))
    try:
        age = time.time() - tmp.stat().st_mtime
    except OSError:
        return False
    return age > _STALE_UNKNOWN_S


_KB_TEMP_FILES = frozenset({TUPLES, MANIFEST, _WRITER, "build_report.json", "build_report.md", "KB_CARD.md"})


def remove_stale_temp_dirs(directory: str | Path) -> list[Path]:
    """Remove the hidden temporary directories that a killed save of the KB `directory` left beside it
    (``.<name>.*.tmp`` and ``.<name>.old-<pid>``): only ours (nothing but KB files inside, or a writer stamp) and
    only stale (`_is_stale`; an old-copy's pid is dead). Returns what was removed."""
    directory = Path(directory)
    parent = directory.parent
    if not parent.is_dir():
        return []
    removed: list[Path] = []
    for cand in parent.glob(f".{glob_escape(directory.name)}.*"):
        if not cand.is_dir() or cand.is_symlink():
            continue
        rest = cand.name[len(directory.name) + 2:]
        if rest.endswith(".tmp"):
            try:
                names = {p.name for p in cand.iterdir()}
            except OSError:
                continue
            ours = _WRITER in names or names <= _KB_TEMP_FILES
            if not ours or not _is_stale(cand):
                continue
        elif rest.startswith("old-") and rest[4:].isdigit():
            if int(rest[4:]) == os.getpid() or _pid_alive(int(rest[4:])):
                continue
            if not (cand / MANIFEST).is_file():
                continue
            if not directory.exists():  # killed between the two renames: the old KB is the KB
                os.replace(cand, directory)
                logger.warning("restored %s from %s, left by a save that did not finish", directory, cand)
                continue
        else:
            continue
        shutil.rmtree(cand, ignore_errors=True)
        removed.append(cand)
        logger.warning("removed %s, left by a save of %s that did not finish", cand, directory)
    return removed


def _created_at() -> str:
    """Now (UTC, seconds), or `SOURCE_DATE_EPOCH` when set (the reproducible-builds convention): two builds of
    the same data then give byte-identical KB directories."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC) if epoch.isdigit() else _dt.datetime.now(_dt.UTC)
    return when.isoformat(timespec="seconds")


def _version() -> str:
    from culturekb._version import __version__

    return __version__


def check_kb_target(directory: str | Path) -> Path:
    """`directory` as a Path when a KB may be written there: a new path, an empty folder or an existing KB (replaced
    whole); a file or a folder of something else raises DataError (the build checks this before any work)."""
    p = Path(directory)
    if p.exists() and not p.is_dir():
        raise DataError(f"{p} is a file; a KB is a directory: choose a new or empty directory")
    if p.is_dir() and any(p.iterdir()) and not (p / MANIFEST).is_file():
        raise DataError(f"refusing to write a KB to {p}: it exists and is not a knowledge base (no manifest.json); "
                        "choose a new or empty directory")
    return p


@contextlib.contextmanager
def kb_writer(directory: str | Path) -> Iterator[Path]:
    """A new temporary folder beside the KB `directory` (a writer stamp inside says which process writes it) that
    replaces `directory` in one rename when the block ends, or is removed when it raises: `directory` then stays as
    it was, and a killed writer's folder is removed by the next save (`remove_stale_temp_dirs`). Whatever the block
    adds (a KB, its index, its calibration) appears at `directory` together or not at all."""
    directory = check_kb_target(directory)
    remove_stale_temp_dirs(directory)
    with atomic_dir(directory) as tmp:
        writer = tmp / _WRITER
        writer.write_text(_writer_stamp(), encoding="utf-8")  # who writes here: a later run knows if it died
        yield tmp
        kill_point("save")
        writer.unlink()


class KnowledgeBase:
    """The tuples of one KB, with its label scheme and build metadata."""

    def __init__(
        self,
        tuples: Iterable[KnowledgeTuple],
        scheme: EmotionScheme | str = "artemis9",
        build_config: dict[str, Any] | None = None,
        embedder: str | None = None,
        extra_counts: dict[str, Any] | None = None,
        cultures: Iterable[Culture] | Mapping[str, Culture] | None = None,
    ) -> None:
        """`cultures` describes the KB's cultures (name, language ...); those it leaves out are taken from the
        process registry (`culturekb.kb.cultures.default_registry`) when the manifest is written."""
        self.scheme = get_scheme(scheme)
        given = cultures.values() if isinstance(cultures, Mapping) else (cultures or ())
        self._culture_details: dict[str, Culture] = {c.id: c for c in given}
        self._legacy_version = False  # set by `load` for a manifest written before it was sealed
        self._sealed_cultures = False  # set by `load` for a sealed manifest: its culture details are the KB's
        self._culture_registry: CultureRegistry | None = None
        self._registry_seen: tuple[int, int] = (0, 0)
        self.tuples: list[KnowledgeTuple] = sorted(tuples, key=lambda t: (t.culture, t.concept))
        self.build_config = dict(build_config or {})
        self.embedder = embedder
        self._extra_counts = dict(extra_counts or {})
        self._version: str | None = None
        seen: set[str] = set()
        for t in self.tuples:
            if t.id in seen:
                raise DataError(f"duplicate tuple for concept {t.concept!r} in culture {t.culture!r}")
            seen.add(t.id)
            if t.label not in self.scheme.labels:
                raise DataError(f"tuple {t.id}: label {t.label!r} is not in scheme {self.scheme.name!r}")
        self._by_key = {(t.culture, t.concept): t for t in self.tuples}
        self.path: Path | None = None

    # -- identity ----------------------------------------------------------------------------------------
    @property
    def extra_counts(self) -> dict[str, Any]:
        """Counts recorded at build time (flagged, dropped, the training label prior ...)."""
        return self._extra_counts

    @extra_counts.setter
    def extra_counts(self, value: dict[str, Any]) -> None:
        self._extra_counts = dict(value)
        self._version = None  # the label prior is part of the version

    @property
    def version(self) -> str:
        """Content hash (first 16 hex digits) of everything that changes what the KB serves: the tuples, the label
        scheme, the training label prior, the cultures with their details (name, language, aliases, Western flag)
        and the build config (`versioned_config`: paths and run-time knobs left out, so the same data and options
        give the same version in any checkout). KBs written before the manifest was sealed (no `manifest_digest`)
        keep their old version (tuples, scheme, prior).

        Computed once: a KnowledgeBase's tuples are not edited in place (`replace` makes a new one).
        """
        if self._version is None:
            content: dict[str, Any] = {"scheme": self.scheme.to_dict(),
                                       "tuples": [t.model_dump(mode="json") for t in self.tuples]}
            if self.extra_counts.get("label_prior"):
                content["label_prior"] = self.extra_counts["label_prior"]
            if not self._legacy_version:
                content["cultures"] = self.cultures
                content["culture_details"] = {cid: c.to_dict() for cid, c in self.culture_details.items()}
                content["build_config"] = versioned_config(self.build_config)
            self._version = stable_hash(content)[:16]
        return self._version

    @property
    def cultures(self) -> list[str]:
        """The cultures with tuples, plus those the build declared, sorted."""
        return sorted({t.culture for t in self.tuples} | set(self.build_config.get("cultures", [])))

    @property
    def culture_details(self) -> dict[str, Culture]:
        """Each culture of the KB with its name, language, Western flag and aliases: as the manifest stored them,
        else as the process registry knows them (a culture known to neither is left out)."""
        out: dict[str, Culture] = {}
        registry = default_registry()
        for cid in self.cultures:
            found = self._culture_details.get(cid)
            if found is None and not self._sealed_cultures:
                found = registry.get(cid)
            if found is not None:
                out[cid] = found
        return out

    @property
    def culture_registry(self) -> CultureRegistry:
        """The process registry with this KB's cultures declared over it (the KB's descriptions win): resolves the
        KB's cultures, their aliases and names without the cultures file they were built with."""
        live = default_registry()
        if self._culture_registry is None or self._registry_seen != (id(live), len(live.ids())):
            registry = live.copy()  # rebuilt when the process registry gained cultures (data read after loading)
            for culture in self._culture_details.values():
                registry.declare(culture)
            self._culture_registry, self._registry_seen = registry, (id(live), len(live.ids()))
        return self._culture_registry

    def culture(self, name: str) -> Culture:
        """The culture an id, alias or name denotes, for this KB (`culture_registry`); ConfigError if unknown."""
        return self.culture_registry.resolve(name)

    def __len__(self) -> int:
        return len(self.tuples)

    def __iter__(self) -> Iterator[KnowledgeTuple]:
        return iter(self.tuples)

    def get(self, concept: str, culture: str) -> KnowledgeTuple | None:
        """The tuple of `concept` in `culture` (exact key), or None."""
        return self._by_key.get((culture, concept))

    def for_culture(self, culture: str) -> list[KnowledgeTuple]:
        """The tuples of one culture, in KB order."""
        return [t for t in self.tuples if t.culture == culture]

    def label_prior(self) -> dict[str, dict[str, float]]:
        """Per culture, the training label distribution over the scheme's labels: as the build recorded it (every
        labelled training sample counted once), else the support-weighted mix of the culture's tuples (KBs built
        before the prior was recorded). A culture with no data gets the uniform distribution."""
        labels = list(self.scheme.labels)
        recorded = self.extra_counts.get("label_prior")
        out: dict[str, dict[str, float]] = {}
        for c in self.cultures:
            acc: dict[str, float] = {}
            if isinstance(recorded, dict) and recorded:
                acc = {lab: float(n) for lab, n in (recorded.get(c) or {}).items()}
            else:
                for t in self.for_culture(c):
                    for lab, p in t.distribution.items():
                        acc[lab] = acc.get(lab, 0.0) + p * t.support
            total = sum(acc.get(lab, 0.0) for lab in labels)
            out[c] = ({lab: acc.get(lab, 0.0) / total for lab in labels} if total > 0
                      else {lab: 1.0 / len(labels) for lab in labels})
        return out

    def counts(self) -> dict[str, Any]:
        """Tuples, rationales, flagged and pending tuples, tuples per culture, plus the build's extra counts."""
        per = Counter(t.culture for t in self.tuples)
        return {
            "tuples": len(self.tuples),
            "rationales": sum(len(t.rationales) for t in self.tuples),
            "flagged": sum(t.flagged for t in self.tuples),
            "pending": sum(t.status == "pending" for t in self.tuples),
            "per_culture": dict(sorted(per.items())),
            **self.extra_counts,
        }

    def manifest(self) -> Manifest:
        """The manifest this KB is saved with (schema and KB version, scheme, cultures, embedder, config, counts),
        sealed with `manifest_digest` (`read_manifest` refuses a manifest edited after it was written)."""
        manifest = Manifest(
            schema_version=SCHEMA_VERSION,
            kb_version=self.version,
            label_scheme=self.scheme.name,
            labels=list(self.scheme.labels),
            scheme=self.scheme.to_dict(),
            cultures=self.cultures,
            culture_details={cid: c.to_dict() for cid, c in self.culture_details.items()},
            embedder=self.embedder,
            build_config=self.build_config,
            counts=self.counts(),
            created_at=_created_at(),
            culturekb_version=_version(),
        )
        manifest.manifest_digest = manifest_digest(manifest.model_dump(mode="json"))
        return manifest

    def replace(self, tuples: Iterable[KnowledgeTuple]) -> KnowledgeBase:
        """A new KB with the same scheme and config but other tuples."""
        return KnowledgeBase(tuples, self.scheme, self.build_config, self.embedder, self.extra_counts,
                             self.culture_details)

    # -- persistence -------------------------------------------------------------------------------------
    def save(self, directory: str | Path, extra_files: dict[str, Any] | None = None,
             keep_files_of: str | Path | None = None, *, into: Path | None = None) -> Path:
        """Write the KB directory atomically: a crash leaves the old directory (or none), never half a KB.

        `extra_files` maps file names to text (written as is) or JSON-serialisable objects (e.g. a build report).
        The KB card (`KB_CARD.md`, `culturekb.kb.card`) is written too, keeping the user's text of the card there.
        `keep_files_of`: a KB directory whose other files and folders (index/, build report, run.log, calibration
        ...) are carried into the new one (hard links when it is `directory` itself, else copies). `into`: the
        temporary folder of a `kb_writer(directory)` block that the caller opened (to add an index and a
        calibration before the KB replaces `directory`); the files go there and the KB's path is `into` until the
        block ends.
        """
        directory = Path(directory)
        check_kb_target(directory)
        extra_files = with_card(self, directory, extra_files)
        with contextlib.nullcontext(into) if into is not None else kb_writer(directory) as tmp:
            write_jsonl(tmp / TUPLES, (t.model_dump(mode="json") for t in self.tuples))
            for name, content in (extra_files or {}).items():
                if isinstance(content, str):
                    atomic_write_text(tmp / name, content)
                else:
                    atomic_write_json(tmp / name, content)
            atomic_write_json(tmp / MANIFEST, self.manifest().model_dump(mode="json"))
            if keep_files_of is not None:
                _carry(Path(keep_files_of), tmp, {TUPLES, MANIFEST, _WRITER, *(extra_files or {})},
                       link=Path(keep_files_of).resolve() == directory.resolve())
        self.path = directory if into is None else into
        return self.path

    @classmethod
    def load(cls, directory: str | Path) -> KnowledgeBase:
        """Load and validate a KB directory; refuses a newer schema or a content hash that does not match."""
        directory = Path(directory)
        manifest = read_manifest(directory)
        scheme = manifest_scheme(manifest, source=str(directory / MANIFEST))
        tpath = directory / TUPLES
        if not tpath.is_file():
            raise DataError(f"{directory}: {TUPLES} is missing; the KB is incomplete, rebuild it")
        tuples: list[KnowledgeTuple] = []
        first_line: dict[str, int] = {}
        tuples_text = read_text_utf8(tpath, fix="the file is damaged, rebuild the KB")
        for lineno, line in enumerate(tuples_text.split("\n"), start=1):  # not splitlines: U+2028 is text
            if not line.strip():
                continue
            try:
                t = KnowledgeTuple.model_validate_json(line)
            except ValidationError as exc:
                raise DataError(
                    f"{tpath}, line {lineno}: invalid tuple: {exc.errors()[0]['msg']}; rebuild the KB"
                ) from exc
            if t.id in first_line:
                raise DataError(f"{tpath}, line {lineno}: a second tuple for concept {t.concept!r} in culture "
                                f"{t.culture!r} (the first is on line {first_line[t.id]}); the file was edited: "
                                "delete one of the two lines, or rebuild the KB or restore it from a copy")
            first_line[t.id] = lineno
            tuples.append(t)
        cultures = manifest_cultures(manifest, source=str(directory / MANIFEST))
        kb = cls(tuples, scheme, manifest.build_config, manifest.embedder, cultures=cultures)
        kb._legacy_version = manifest.manifest_digest is None
        kb._sealed_cultures = not kb._legacy_version
        kb.extra_counts = {k: v for k, v in manifest.counts.items() if k not in kb.counts()}
        if kb.version != manifest.kb_version:
            if kb._legacy_version:
                sealed = cls(tuples, scheme, manifest.build_config, manifest.embedder, cultures=cultures)
                sealed._sealed_cultures, sealed.extra_counts = True, kb.extra_counts
                if sealed.version == manifest.kb_version:  # the tuples are right: the manifest lost its seal
                    raise DataError(
                        f"{directory / MANIFEST}: its manifest_digest was removed (its kb_version is that of a sealed "
                        "manifest, which covers the culture details and build config): the manifest was edited. "
                        "Restore manifest.json from a copy, or rebuild the KB")
            raise DataError(
                f"{directory}: tuples do not match the manifest's kb_version ({manifest.kb_version} != {kb.version}); "
                "the files were edited or truncated. Rebuild the KB or restore it from a copy."
            )
        if kb._legacy_version:
            logger.warning("%s: the manifest was written by an older culturekb and is not sealed (its culture "
                           "details and build config are not versioned); rebuild the KB to seal it",
                           directory / MANIFEST)
        kb.path = directory
        return kb


def _carry(source: Path, target: Path, written: set[str], link: bool) -> None:
    """Copy (or hard-link) every entry of `source` but the `written` ones into `target`."""
    if not source.is_dir():
        return
    copy = os.link if link else shutil.copy2
    for entry in sorted(source.iterdir()):
        if entry.name in written:
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target / entry.name)
        elif entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True, copy_function=copy)
        else:
            copy(entry, target / entry.name)


def read_manifest(directory: str | Path) -> Manifest:
    """The validated manifest of a KB directory (without reading its tuples); refuses a newer schema."""
    directory = Path(directory)
    mpath = directory / MANIFEST
    if not mpath.is_file():
        raise DataError(
            f"{directory} is not a knowledge base: {MANIFEST} is missing. Build one with `culturekb build`."
        )
    try:
        raw = json.loads(read_text_utf8(mpath, fix="the manifest is damaged; rebuild the KB"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{mpath}: manifest is not valid UTF-8 JSON ({exc}); rebuild the KB") from exc
    if not isinstance(raw, dict):
        raise DataError(f"{mpath}: the manifest is not a JSON object; rebuild the KB")
    sv = raw.get("schema_version")
    if not isinstance(sv, int):
        raise SchemaError(f"{mpath}: 'schema_version' missing or not an integer; rebuild the KB")
    if sv > SCHEMA_VERSION:
        raise SchemaError(
            f"{mpath}: KB schema version {sv} is newer than this culturekb supports ({SCHEMA_VERSION}); "
            "upgrade culturekb (pip install -U culturekb) to read it"
        )
    digest = raw.get("manifest_digest")
    if digest is not None and digest != manifest_digest(raw):
        raise DataError(
            f"{mpath} was edited after the KB was written (its manifest_digest does not match): the whole manifest "
            "(culture details, scheme, build config, counts) is part of the KB version. Restore the file from a copy, "
            "or rebuild the KB with `culturekb build` (a culture's name, language or aliases: `--cultures-file`)"
        )
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        raise DataError(f"{mpath}: invalid manifest: {exc.errors()[0]['loc']} {exc.errors()[0]['msg']}") from exc
    return manifest


def manifest_digest(raw: Mapping[str, Any]) -> str:
    """The seal of a manifest: the hash of all its fields but `manifest_digest` itself (JSON content, key order
    aside). Any edit of the file (a culture's language, a count, the build config) changes it."""
    return stable_hash({k: v for k, v in raw.items() if k != "manifest_digest"})


_UNVERSIONED_CONFIG = frozenset({"scheme", "chunk_size", "max_concurrency", "base_url"})
"""Build options that change no content: the scheme file's path (its content is versioned as the scheme), the
batch size, the concurrency bound and the endpoint (what it answered is in the tuples)."""


def versioned_config(build_config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a build config that the KB version hashes (`_UNVERSIONED_CONFIG` left out)."""
    return {k: v for k, v in build_config.items() if k not in _UNVERSIONED_CONFIG}


def manifest_cultures(manifest: Manifest, source: str = MANIFEST) -> list[Culture]:
    """The cultures a manifest describes (id, name, aliases, language, Western flag): a KB never needs the cultures
    file it was built with."""
    return [Culture.from_dict({"id": cid, **raw}, source=f"{source}, culture {cid!r}")
            for cid, raw in manifest.culture_details.items()]


def manifest_scheme(manifest: Manifest, source: str = MANIFEST) -> EmotionScheme:
    """The label scheme a manifest embeds (labels, translations, vocabulary, quadrants, mappings): a KB never needs
    its scheme file. Manifests without an embedded scheme name a built-in one."""
    if manifest.scheme:
        return EmotionScheme.from_dict(manifest.scheme, source=source)
    return get_scheme(manifest.label_scheme)


def write_card(kb_dir: str | Path) -> Path:
    """(Re)generate the card of an existing KB in place (atomically), keeping the user's text; returns its path."""
    directory = Path(kb_dir)
    kb = KnowledgeBase.load(directory)
    path = directory / CARD
    atomic_write_text(path, card_text(kb, directory))
    return path
