"""File manifests for saved indexes: sizes always, SHA-256 when affordable, so truncation and corruption are caught."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturekb._io import read_json, sha256_file
from culturekb.errors import IndexError_

__all__ = ["HASH_LIMIT_BYTES", "REBUILD_HINT", "file_manifest", "verify_files", "read_meta"]

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
