"""File helpers shared by every layer: atomic writes, content hashing, UTF-8 text and JSON/JSONL rows with errors
that name the file and line, image references that cannot leave their data root, and the one URI test.

Every reader raises `DataError` (or the error class the caller names) with the file, the place and the fix.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from culturekb.errors import CultureKBError, DataError

__all__ = [
    "atomic_write_text",
    "atomic_write_bytes",
    "iter_jsonl_text",
    "check_text_fields",
    "MAX_TEXT_FIELD",
    "json_value",
    "atomic_write_json",
    "atomic_dir",
    "file_mode",
    "dir_mode",
    "PRIVATE_FILES_ENV",
    "sha256_text",
    "sha256_file",
    "stable_hash",
    "read_jsonl",
    "write_jsonl",
    "read_text_utf8",
    "read_json",
    "iter_json_records",
    "is_uri",
    "is_remote_url",
    "safe_relpath",
    "resolve_image_ref",
    "with_image_suffix",
    "IMAGE_SUFFIXES",
    "check_contained",
    "exclusive_lock",
    "sqlite_wal",
]

PRIVATE_FILES_ENV = "CULTUREKB_PRIVATE_FILES"
"""Set to 1 (or true/yes/on) to write files 0600 and folders 0700 whatever the umask (private mode)."""

_URI = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://|data:)", re.IGNORECASE)
_WINDOWS_DRIVE = re.compile(r"^[a-zA-Z]:")


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask would race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _private() -> bool:
    return os.environ.get(PRIVATE_FILES_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def file_mode() -> int:
    """The mode new files get: 0666 less the umask (0644 under the usual 022), or 0600 in private mode.

    Temporary files (`tempfile.mkstemp`) are created 0600; atomic writers chmod them to this before the rename,
    so a KB or a report is readable by the same users as any other file the user writes.
    """
    return 0o600 if _private() else 0o666 & ~_umask()


def dir_mode() -> int:
    """The mode new folders get: 0777 less the umask (0755 under the usual 022), or 0700 in private mode."""
    return 0o700 if _private() else 0o777 & ~_umask()


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write text to `path` through a temporary file and a rename, so readers never see half a file."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, payload: bytes) -> None:
    """Write bytes to `path` through a temporary file and a rename (fsync'd), so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())  # mkstemp creates 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, obj: Any, *, sort_keys: bool = True) -> None:
    """Write `obj` as indented UTF-8 JSON, atomically; keys sorted unless `sort_keys` is False (then in the
    mappings' own order, for a caller that orders them itself)."""
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=sort_keys) + "\n")


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it replaces `target` in one rename.

    On any error the temporary directory is removed and `target` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        os.chmod(tmp, dir_mode())  # mkdtemp creates 0700
        yield tmp
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sha256_text(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 bytes of `text`."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj: Any) -> str:
    """Hash of a JSON-serialisable object, independent of dict order."""
    return sha256_text(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str))


def read_text_utf8(path: str | Path, *, fix: str = "re-save the file as UTF-8",
                   error: type[CultureKBError] = DataError) -> str:
    """The text of a UTF-8 file (a leading byte-order mark removed).

    A missing file, a directory, or a byte that is not UTF-8 raises `error` (DataError by default) naming the file
    (and, for bad bytes, the byte offset and line) and `fix`.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise error(f"{path}: the file does not exist; check the path") from exc
    except IsADirectoryError as exc:
        raise error(f"{path}: is a directory; give the path of a file") from exc
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc}); check the file and its permissions") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{path}: not valid UTF-8 at byte offset {exc.start} (line {line}); {fix}") from exc
    return text.removeprefix("\ufeff")


def read_json(path: str | Path, *, fix: str = "fix the file", error: type[CultureKBError] = DataError) -> Any:
    """The JSON value in a UTF-8 file; unreadable bytes or invalid JSON raise `error` naming the file, the line
    and `fix`."""
    return json_value(read_text_utf8(path, fix=fix, error=error), path, fix, error)


def json_value(text: str, where: str | Path, fix: str = "fix or remove the line",
               error: type[CultureKBError] = DataError, *, one_line: bool = False) -> Any:
    """`json.loads(text)`, with every way the text can fail turned into `error` naming `where` and `fix`: invalid
    JSON, nesting too deep for the parser (RecursionError), an integer longer than Python converts (ValueError,
    `sys.get_int_max_str_digits`). `one_line`: `text` is one line of a file that `where` names, so a JSON error
    gives only its column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if one_line:
            raise error(f"{where}: invalid JSON ({exc.msg} at column {exc.colno}); {fix}") from exc
        raise error(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); {fix}") from exc
    except RecursionError as exc:
        raise error(f"{where}: the JSON is nested too deeply to read (thousands of brackets); {fix}") from exc
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise error(f"{where}: a value cannot be read ({exc}); numbers must be shorter than "
                    f"{sys.get_int_max_str_digits()} digits (write long ids as strings); {fix}") from exc


MAX_TEXT_FIELD = 131_072
"""Most characters of one text field (or key) in any data file: the CSV reader's own limit
(`csv.field_size_limit`), the same for JSON, JSONL and TSV (a 50 MB field would run a build for minutes)."""


def check_text_fields(obj: Any, where: str | Path, limit: int = MAX_TEXT_FIELD) -> None:
    """Refuse a record with a string (value or key, at any depth) longer than `limit` characters: DataError naming
    `where` (file and line), the field and the fix."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        name, value = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                raise DataError(f"{where}, field {name or '(the value)'!r}: {len(value):,} characters, above the "
                                f"limit of {limit:,} for one text field; shorten it, or keep long texts (whole "
                                "documents) outside the data file")
        elif isinstance(value, dict):
            for key, item in value.items():
                key_name = f"{name}.{key}" if name else str(key)
                if isinstance(key, str) and len(key) > limit:
                    raise DataError(f"{where}: a key of {len(key):,} characters (starting {key[:40]!r}), above "
                                    f"the limit of {limit:,}; shorten it")
                stack.append((key_name[:200], item))
        elif isinstance(value, list):
            stack.extend((f"{name}[{i}]", item) for i, item in enumerate(value))


def iter_jsonl_text(text: str, where: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a bad line raises DataError naming `where` and the line.

    Lines end at ``\\n`` only (a ``\\r`` before it is dropped): U+2028, U+0085 and the other characters that
    `str.splitlines` also breaks at are valid inside a JSON string."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        obj = json_value(line, f"{where}, line {lineno}", "one JSON object per line: fix or remove the line",
                         one_line=True)
        if not isinstance(obj, dict):
            raise DataError(f"{where}, line {lineno}: expected a JSON object, got {type(obj).__name__}")
        check_text_fields(obj, f"{where}, line {lineno}")
        yield lineno, obj


def iter_json_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of a JSONL file, or (item number, object) of a ``.json`` file that holds a list of objects.

    A file whose text starts with ``[`` is read as a JSON list whatever its suffix. Bad JSON, or an item that is
    not an object, raises DataError naming the file and the line (or item).
    """
    path = Path(path)
    text = read_text_utf8(path)
    if path.suffix.lower() == ".json" or text.lstrip().startswith("["):
        items = json_value(text, path, "fix the file")
        if not isinstance(items, list):
            raise DataError(f"{path}: a .json data file must hold a list of objects; use JSONL for one object per "
                            "line")
        for i, obj in enumerate(items, start=1):
            if not isinstance(obj, dict):
                raise DataError(f"{path}, item {i}: expected a JSON object, got {type(obj).__name__}")
            check_text_fields(obj, f"{path}, item {i}")
            yield i, obj
        return
    yield from iter_jsonl_text(text, path)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file; a bad line raises DataError naming the file and line."""
    return [obj for _, obj in iter_jsonl_text(read_text_utf8(path), path)]


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    """Write rows as JSONL (sorted keys, UTF-8), atomically."""
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))


# -- references to images -------------------------------------------------------------------------------------


def is_uri(ref: str) -> bool:
    """True for a reference with a URI scheme (``http://``, ``https://``, ``file://``, ``s3://`` ...) or a
    ``data:`` URL; such references are kept as given, never joined to a data root. A Windows drive (``C:\\``) is
    not a scheme."""
    return bool(_URI.match(ref.strip()))


def is_remote_url(ref: str) -> bool:
    """True for `http://` and `https://` references (fetched by the model server, not by us)."""
    return ref.strip().lower().startswith(("http://", "https://"))


def _is_absolute(ref: str) -> bool:
    posix = ref.replace("\\", "/")
    return posix.startswith("/") or bool(_WINDOWS_DRIVE.match(posix)) or Path(ref).is_absolute()


def safe_relpath(ref: str, where: str, data_root: str | Path | None = None) -> str:
    """`ref` as a relative POSIX path that stays inside its data root; an absolute path, a drive letter or a
    ``..`` part raises DataError naming `where`."""
    posix = ref.replace("\\", "/")
    if _is_absolute(ref) or ".." in PurePosixPath(posix).parts:
        root = f"the data root {data_root}" if data_root is not None else "the data root"
        raise DataError(
            f"{where}: image path {ref!r} escapes {root}; image paths must be relative and must not contain "
            "'..'. Fix the path (an absolute path is accepted only without a data root)"
        )
    return posix


def check_contained(path: str | Path, root: str | Path, where: str, ref: str | None = None) -> None:
    """Raise DataError when `path`, with every symbolic link on the way followed, is not inside `root` (itself
    resolved): a linked file or a linked folder under the data root must not lead out of it. A path that does not
    exist yet is checked as far as it exists."""
    real_root = Path(root).resolve()
    real = Path(path).resolve()
    if real != real_root and real_root not in real.parents:
        shown = ref if ref is not None else str(path)
        raise DataError(
            f"{where}: image path {shown!r} leads out of the data root {root} through a symbolic link (to {real}); "
            "image paths must stay inside the data root. Copy the file into it, or point --data-root at the "
            "folder that really holds the images"
        )


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
"""Image file extensions, looked for (in any case) when a data file names an image by its id alone."""


def with_image_suffix(path: Path, where: str, ref: str) -> Path:
    """`path`, or, when no file is there and its name has no image extension (a release that names its images by
    id: BanglaVerse's ``culture_001`` is ``culture_001.jpg``, ``culture_005.png``), the one file beside it named so
    with an image extension (`IMAGE_SUFFIXES`, any case). Two such files raise DataError (which one is meant?);
    none leaves `path` as it is."""
    if path.suffix.lower() in IMAGE_SUFFIXES or path.is_file() or not path.parent.is_dir():
        return path
    found = sorted(p for p in path.parent.glob(glob.escape(path.name) + ".*")
                   if p.stem == path.name and p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if len(found) > 1:
        raise DataError(f"{where}: image {ref!r} names no extension and {len(found)} files fit it "
                        f"({', '.join(p.name for p in found)}); name the file with its extension")
    return found[0] if found else path


def resolve_image_ref(ref: str, where: str, *, data_root: str | Path | None = None, base_dir: str | Path | None = None,
                      check: bool = False) -> str:
    """Where the image `ref` of a data file is: a URI unchanged; a relative path under `data_root` (else under
    `base_dir`, the data file's folder); an absolute path only when no `data_root` is given. A name without an
    image extension is the image file of that name with one (`with_image_suffix`).

    A path that would leave the data root raises DataError (`safe_relpath`); with `check`, so does a local file
    that does not exist.
    """
    ref = ref.strip()
    if is_uri(ref):
        return ref
    if data_root is None and _is_absolute(ref):
        path = with_image_suffix(Path(ref), where, ref)
    else:
        rel = PurePosixPath(safe_relpath(ref, where, data_root))
        base = Path(data_root) if data_root is not None else Path(base_dir) if base_dir is not None else Path()
        path = with_image_suffix(base / Path(*rel.parts), where, ref)
        check_contained(path, base, where, ref)
    if check and not path.is_file():
        raise DataError(
            f"{where}: image {ref!r} not found at {str(path)!r}; pass --data-root (data_root=) pointing at the image "
            "folder, fix the path, or load with check_images=False"
        )
    return str(path)


@contextlib.contextmanager
def exclusive_lock(target: str | Path, what: str, fix: str) -> Iterator[Path]:
    """Hold an exclusive lock named after `target` (the hidden file ``.<name>.lock`` beside it) while the block
    runs; when another process holds it, raise DataError at once naming `what`, that process and `fix`.

    The lock is an OS file lock (``fcntl.flock``): it is released when the holder exits, even when killed, so a
    crashed run never leaves a lock that blocks the next one. The holder removes the lock file when the block
    ends (finished or failed); one left by a killed holder is taken over and removed by the next run. A process
    that opened the file just before it was removed finds, once it holds the lock, that the path is gone or is
    another file, and starts over on the new one, so two holders never hold two different files."""
    import fcntl

    target = Path(target)
    made = [d for d in (target.parent, *target.parent.parents) if not d.exists()]  # deepest first
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = target.with_name(f".{target.name}.lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # a refused run removed the folder it had made for its lock: make it again
            target.parent.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise DataError(f"{what}: another process (pid {holder}) is writing to {target} now; {fix}") from exc
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed this file: lock the one at the path now
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # removed while held: a waiter that opened it sees it is gone and starts over
        os.close(fd)  # closing the descriptor releases the lock
        for folder in made:  # the folders made for the lock, when the block left nothing in them (a refused run)
            with contextlib.suppress(OSError):
                folder.rmdir()


def sqlite_wal(conn: sqlite3.Connection, timeout_s: float = 30.0) -> None:
    """Put an SQLite connection in WAL mode, waiting up to `timeout_s` while another process holds the file.

    SQLite may answer a journal-mode change with "database is locked" at once, without calling the busy handler,
    while another connection is opening or writing the same file (two builds sharing one cache). Retries with a
    growing pause; other errors, and the lock still held at the deadline, are raised.
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.25)
