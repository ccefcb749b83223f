"""The shared file helpers (culturekb._io) and the one URI rule both loader stacks follow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturekb._io import (
    is_remote_url,
    is_uri,
    iter_json_records,
    read_jsonl,
    read_text_utf8,
    resolve_image_ref,
    safe_relpath,
)
from culturekb.errors import ConfigError, DataError
from culturekb.evals.ricevl.data import load_ricevl_vqa
from culturekb.kb.loaders import load_samples_jsonl


def test_read_text_utf8_errors_name_file_offset_and_line(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes("\ufeffline one\ncaf".encode() + b"\xe9\n")
    with pytest.raises(DataError, match=r"x.txt: not valid UTF-8 at byte offset 15 \(line 2\); re-save"):
        read_text_utf8(p)
    with pytest.raises(DataError, match="does not exist"):
        read_text_utf8(tmp_path / "missing.txt")
    with pytest.raises(DataError, match="is a directory"):
        read_text_utf8(tmp_path)
    with pytest.raises(ConfigError, match="rebuild it"):
        read_text_utf8(p, fix="rebuild it", error=ConfigError)
    p.write_text("\ufeffhello", encoding="utf-8")
    assert read_text_utf8(p) == "hello"  # the byte-order mark is not part of the text


def test_json_records_jsonl_and_array(tmp_path: Path) -> None:
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n', encoding="utf-8")
    assert list(iter_json_records(p)) == [(1, {"a": 1}), (3, {"a": 2})]
    assert read_jsonl(p) == [{"a": 1}, {"a": 2}]
    p.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"rows.jsonl, line 2: invalid JSON .*at column"):
        read_jsonl(p)
    p.write_text('{"a": 1}\n[1]\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: expected a JSON object, got list"):
        list(iter_json_records(p))
    arr = tmp_path / "rows.json"
    arr.write_text(json.dumps([{"a": 1}, {"a": 2}]), encoding="utf-8")
    assert [obj["a"] for _, obj in iter_json_records(arr)] == [1, 2]
    arr.write_text(json.dumps([{"a": 1}, 3]), encoding="utf-8")
    with pytest.raises(DataError, match=r"rows.json, item 2: expected a JSON object"):
        list(iter_json_records(arr))


@pytest.mark.parametrize(
    ("ref", "uri", "remote"),
    [
        ("https://example.org/a.jpg", True, True),
        ("HTTP://example.org/a.jpg", True, True),
        ("file:///data/a.jpg", True, False),
        ("s3://bucket/a.jpg", True, False),
        ("data:image/png;base64,AAAA", True, False),
        ("C:\\images\\a.jpg", False, False),
        ("images/a.jpg", False, False),
        ("/abs/a.jpg", False, False),
    ],
)
def test_is_uri(ref: str, uri: bool, remote: bool) -> None:
    assert is_uri(ref) is uri
    assert is_remote_url(ref) is remote


@pytest.mark.parametrize("ref", ["../a.jpg", "a/../../b.jpg", "/etc/passwd", "C:/x.jpg", "..\\a.jpg"])
def test_safe_relpath_refuses_escapes(ref: str) -> None:
    with pytest.raises(DataError, match=r"here: image path .* escapes the data root"):
        safe_relpath(ref, "here")


def test_resolve_image_ref(tmp_path: Path) -> None:
    assert resolve_image_ref("s3://b/a.jpg", "w", data_root=tmp_path) == "s3://b/a.jpg"
    assert resolve_image_ref("sub\\a.jpg", "w", data_root=tmp_path) == str(tmp_path / "sub" / "a.jpg")
    assert resolve_image_ref("a.jpg", "w", base_dir=tmp_path) == str(tmp_path / "a.jpg")
    assert resolve_image_ref("/abs/a.jpg", "w") == "/abs/a.jpg"  # absolute only without a data root
    with pytest.raises(DataError, match="escapes the data root"):
        resolve_image_ref("/abs/a.jpg", "w", data_root=tmp_path)
    with pytest.raises(DataError, match=r"w: image 'a.jpg' not found at .*check_images=False"):
        resolve_image_ref("a.jpg", "w", data_root=tmp_path, check=True)


def _one_row_each(tmp_path: Path, ref: str) -> tuple[Path, Path]:
    """A KB sample file and a RICE-VL VQA file, one row each, both naming the image `ref`."""
    kb_file = tmp_path / "s.jsonl"
    kb_file.write_text(json.dumps({"id": "a", "culture": "en", "label": "awe", "image": ref}) + "\n", "utf-8")
    vqa_file = tmp_path / "v.jsonl"
    vqa_file.write_text(json.dumps({"id": "q", "country": "SG", "category": "food", "format": "qa",
                                    "question": "What?", "answer": "laksa", "image": ref}) + "\n", "utf-8")
    return kb_file, vqa_file


@pytest.mark.parametrize("ref", ["s3://bucket/a.jpg", "file:///data/a.jpg", "data:image/png;base64,AAAA",
                                 "https://example.org/a.jpg"])
def test_both_loader_stacks_agree_on_uris(tmp_path: Path, ref: str) -> None:
    kb_file, vqa_file = _one_row_each(tmp_path, ref)
    assert load_samples_jsonl(kb_file, data_root=tmp_path).samples[0].image == ref
    assert load_ricevl_vqa(vqa_file, data_root=tmp_path, check_images=False)[0].image == ref


@pytest.mark.parametrize("ref", ["../outside.jpg", "a/../../b.jpg"])
def test_both_loader_stacks_refuse_escapes_without_a_data_root(tmp_path: Path, ref: str) -> None:
    kb_file, vqa_file = _one_row_each(tmp_path, ref)
    with pytest.raises(DataError, match="escapes the data root"):
        load_samples_jsonl(kb_file)
    with pytest.raises(DataError, match="escapes the data root"):
        load_ricevl_vqa(vqa_file, check_images=False)


def test_sqlite_wal_waits_out_a_lock_another_process_holds():
    """A journal-mode change can answer "database is locked" at once (no busy handler) while another process opens
    the same cache; it is retried until the lock goes, other errors are raised at once."""
    import sqlite3

    from culturekb._io import sqlite_wal

    class Flaky:
        def __init__(self, errors):
            self.errors = list(errors)
            self.calls = 0

        def execute(self, sql):
            self.calls += 1
            if self.errors:
                raise sqlite3.OperationalError(self.errors.pop(0))
            return None

    conn = Flaky(["database is locked", "database is locked"])
    sqlite_wal(conn, timeout_s=5)  # type: ignore[arg-type]
    assert conn.calls == 3
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        sqlite_wal(Flaky(["disk I/O error"]), timeout_s=5)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite_wal(Flaky(["database is locked"] * 1000), timeout_s=0.05)  # type: ignore[arg-type]


def test_a_refused_block_leaves_no_folder_made_for_its_lock(tmp_path):
    from culturekb._io import exclusive_lock

    target = tmp_path / "new" / "deeper" / "run"
    with pytest.raises(ValueError, match="input refused"), exclusive_lock(target, "eval x", "fix"):
        raise ValueError("input refused")
    assert not (tmp_path / "new").exists()
    # a block that writes there keeps the folders (and its output)
    with exclusive_lock(target, "eval x", "fix"):
        target.mkdir()
    assert target.is_dir() and not list(target.parent.glob(".*.lock"))
