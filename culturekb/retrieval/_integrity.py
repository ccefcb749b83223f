"""File manifests for saved indexes: sizes always, SHA-256 when affordable, so truncation and corruption are caught."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturekb._io import read_json, sha256_file, sha256_text
from culturekb.errors import IndexError_

__all__ = [
    "HASH_LIMIT_BYTES",
    "REBUILD_HINT",
    "IGNORED_NAMES",
    "file_manifest",
    "verify_files",
    "read_meta",
    "tree_files",
    "verify_tree",
    "meta_digest",
    "check_digest",
]

HASH_LIMIT_BYTES = 256 * 1024 * 1024
"""Files up to this size get a SHA-256 checked on load; bigger ones only their size (hashing GBs is slow)."""

REBUILD_HINT = "rebuild it with `culturekb index --kb <KB_DIR> --backend <BACKEND>`"


def file_manifest(directory: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Size and (for files up to HASH_LIMIT_BYTES) SHA-256 of each named file, relative to `directory`."""
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(names):
        path = directory / name
        size = path.stat().st_size
        entry: dict[str, Any] = {"bytes": size}
        if size <= HASH_LIMIT_BYTES:
            entry["sha256"] = sha256_file(path)
        out[name] = entry
    return out


def verify_files(
    directory: Path, manifest: dict[str, dict[str, Any]], verify_hash: bool = True, hint: str = REBUILD_HINT
) -> None:
    """Raise IndexError_ naming the file when one is missing, truncated, grown or (when hashed) altered."""
    for name, entry in manifest.items():
        path = directory / name
        if not path.is_file():
            raise IndexError_(f"index file {path} is missing; the index is incomplete, {hint}")
        size = path.stat().st_size
        if size != entry.get("bytes"):
            raise IndexError_(
                f"index file {path} has {size} bytes but {entry.get('bytes')} were written; "
                f"it is truncated or corrupted, {hint}"
            )
        if verify_hash and "sha256" in entry and sha256_file(path) != entry["sha256"]:
            raise IndexError_(f"index file {path} does not match its recorded SHA-256; it is corrupted, {hint}")


def read_meta(path: Path, what: str, hint: str = REBUILD_HINT) -> dict[str, Any]:
    """Read a JSON metadata file of an index, turning every failure into IndexError_ with the fix."""
    if not path.is_file():
        raise IndexError_(f"{what} {path} is missing; no index was saved there, {hint}")
    raw = read_json(path, fix=f"{what} is truncated or corrupted, {hint}", error=IndexError_)
    if not isinstance(raw, dict):
        raise IndexError_(f"{what} {path} is not a JSON object; it is corrupted, {hint}")
    return raw


IGNORED_NAMES = frozenset({".lock"})
"""File names a tree manifest skips: the lock file local Qdrant storage creates while it is open."""

DIGEST_FIELD = "digest"


def tree_files(directory: Path, skip: Iterable[str] = ()) -> list[str]:
    """Every file under `directory`, as sorted POSIX paths relative to it (`skip`: relative paths left out;
    `IGNORED_NAMES` are always left out). Symbolic links count as files, so a planted link is noticed."""
    skipped = set(skip)
    out = []
    for path in directory.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            continue
        rel = path.relative_to(directory).as_posix()
        if rel in skipped or path.name in IGNORED_NAMES:
            continue
        out.append(rel)
    return sorted(out)


def verify_tree(
    directory: Path,
    manifest: dict[str, dict[str, Any]],
    skip: Iterable[str] = (),
    verify_hash: bool = True,
    hint: str = REBUILD_HINT,
) -> None:
    """Raise IndexError_ unless the files under `directory` are exactly those of `manifest` (no file missing, no
    unknown file added) and each has its recorded size and (when `verify_hash`) SHA-256."""
    if not manifest:
        raise IndexError_(f"the file manifest of {directory} is empty; the index metadata was altered, {hint}")
    present = set(tree_files(directory, skip))
    extra = sorted(present - set(manifest))
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise IndexError_(
            f"index at {directory} holds files its manifest does not list ({shown}); they were added after the "
            f"index was written and could change what it serves. Remove them, or {hint}"
        )
    for name in manifest:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise IndexError_(f"the manifest of {directory} names {name!r}, outside the index; it was altered, {hint}")
    verify_files(directory, manifest, verify_hash=verify_hash, hint=hint)


def meta_digest(raw: dict[str, Any]) -> str:
    """SHA-256 of a metadata object without its own `digest` field (canonical JSON: sorted keys, no spaces)."""
    body = {k: v for k, v in raw.items() if k != DIGEST_FIELD}
    return sha256_text(json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def check_digest(raw: dict[str, Any], path: Path, hint: str = REBUILD_HINT) -> None:
    """Raise IndexError_ unless `raw` carries the digest of its own content (it was not edited after writing)."""
    recorded = raw.get(DIGEST_FIELD)
    if not isinstance(recorded, str) or recorded != meta_digest(raw):
        raise IndexError_(
            f"{path} does not match its recorded digest; it was edited after the index was written, {hint}"
        )
