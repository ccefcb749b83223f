"""The bad-input corpus of issue 15: every case of `cases.toml` run through the real CLI (in process, typer's
CliRunner), and the JSON traps run over every loader; plus the cases that need more than one command (review
queue export, concurrent builds, two writers on one cache) and image checks.

Each CLI case asserts its exit status and message fragment and, for a refused input, that nothing was written:
neither the ``--out`` folder nor the cache (validate before work). Big inputs are generated here in tmp_path.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import tomllib
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.errors import DataError

HERE = Path(__file__).parent
FILES = HERE / "files"
# cases.toml and any cases_*.toml beside it (one table per probe, so that probes add cases without touching each other)
CASES: list[dict[str, Any]] = [
    case
    for table in sorted(HERE.glob("cases*.toml"))
    for case in tomllib.loads(table.read_text("utf-8")).get("case", [])
]
runner = CliRunner()


def _run(args: list[str]) -> Any:
    return runner.invoke(app, args)


# -- inputs made at run time -------------------------------------------------------------------------------------
_ROWS: dict[str, Callable[[str], str]] = {
    "build": lambda v: '{"id": "x::en", "culture": "en", "label": "awe", "split": "train", "metadata": ' + v + "}",
    "cedar": lambda v: '{"id": "c1", "language": "en", "modality": "text", "narrative": "A storm.", '
                       '"question": "Which emotion?", "label": "fear", "extra": ' + v + "}",
    "ricevl": lambda v: '{"id": "q1", "country": "SG", "category": "food", "format": "qa", "question": "What?", '
                        '"answer": "crab", "extra": ' + v + "}",
}


def _generate(spec: str, root: Path) -> Path:
    kind, fmt = spec.split(":")
    if kind == "bigfield":
        path = root / "big_field.csv"
        path.write_text("painting,art_style,emotion,utterance\nmonet_pond,Impressionism,contentment,\""
                        + "x" * 300_000 + "\"\n", encoding="utf-8")
        return path
    value = {"deep": "[" * 100_000 + "]" * 100_000, "bigint": "9" * 5000}[kind]
    path = root / f"{kind}_{fmt}.jsonl"
    path.write_text(_ROWS[fmt](value) + "\n", encoding="utf-8")
    return path


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` pixels (a decompression bomb: a few bytes on disk)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


def _data_root(tmp: Path) -> Path:
    """A data root with a good image, a text file named .jpg, a bomb, and links that lead out of it."""
    from PIL import Image

    outside = tmp / "outside"
    outside.mkdir()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(outside / "secret.png")
    root = tmp / "root"
    root.mkdir()
    Image.new("RGB", (8, 8)).save(root / "ok.png")
    (root / "not_an_image.jpg").write_text("this is not a JPEG", encoding="utf-8")
    (root / "bomb.png").write_bytes(_png_header(100_000, 100_000))
    (root / "linked.png").symlink_to(outside / "secret.png")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small KB with no index (built offline with the lexicon judges, no model)."""
    root = tmp_path_factory.mktemp("corpus_kb")
    data = root / "train.jsonl"
    rows = [{"id": f"img{i}::en", "culture": "en", "label": "awe", "concepts": ["sea"], "split": "train"}
            for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = _run(["build", str(data), "--out", str(root / "kb"), "--concepts", "precomputed", "--judges",
                "lexicon,lexicon", "--min-support", "1", "--cache-dir", str(root / "cache")])
    assert res.exit_code == 0, res.output
    return root / "kb"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_corpus_case(case: dict[str, Any], tmp_path: Path, kb_dir: Path) -> None:
    root = _data_root(tmp_path)
    if "file" in case:
        data = root / case["file"]
        shutil.copyfile(FILES / case["file"], data)
    elif "generate" in case:
        data = _generate(case["generate"], root)
    else:
        data = root
    out, cache = tmp_path / "out", tmp_path / "cache"
    if case.get("setup") == "out_file":
        out.write_text("not a folder", encoding="utf-8")
    elif case.get("setup") == "out_not_kb":
        out.mkdir()
        (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = sorted(p.name for p in out.iterdir()) if out.is_dir() else out.exists()
    index_before = (kb_dir / "index").exists()
    values = {"file": str(data), "out": str(out), "root": str(root), "cache": str(cache), "kb": str(kb_dir)}
    res = _run([a.format(**values) for a in case["args"]])
    text = " ".join(res.output.split())  # rich wraps long lines
    assert res.exit_code == case["exit"], f"{case['name']}: exit {res.exit_code}\n{res.output}\n{res.exception!r}"
    assert " ".join(case["message"].split()) in text, f"{case['name']}: {res.output}"
    assert "Traceback" not in res.output
    if case["exit"] == 2:  # refused before any work: nothing written
        after = sorted(p.name for p in out.iterdir()) if out.is_dir() else out.exists()
        assert after == before, f"{case['name']} wrote to --out: {after}"
        assert not (cache / "steps.sqlite").exists(), f"{case['name']} opened the step cache"
        assert (kb_dir / "index").exists() == index_before, f"{case['name']} built the KB's index"


def test_every_corpus_file_is_in_the_table() -> None:
    named = {c["file"] for c in CASES if "file" in c}
    assert named == {p.name for p in FILES.iterdir()}


# -- the JSON traps over every loader ------------------------------------------------------------------------------
def _loaders() -> dict[str, Callable[[Path], Any]]:
    from culturekb.evals.cedar.data import load_cedar
    from culturekb.evals.commet import load_story_turns
    from culturekb.evals.culturaltom import load_culturaltom
    from culturekb.evals.ricevl.data import load_cue_metadata, load_ricevl_grounding, load_ricevl_vqa
    from culturekb.kb.loaders import load_samples_jsonl

    return {
        "samples_jsonl": load_samples_jsonl,
        "cedar": load_cedar,
        "ricevl_vqa": load_ricevl_vqa,
        "ricevl_grounding": load_ricevl_grounding,
        "cue_metadata": load_cue_metadata,
        "culturaltom": load_culturaltom,
        "commet": load_story_turns,
    }


@pytest.mark.parametrize("loader", sorted(_loaders()))
@pytest.mark.parametrize(("trap", "fragment"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("9" * 5000, "4300 digits"),
])
def test_json_traps_give_a_data_error_in_every_loader(loader: str, trap: str, fragment: str, tmp_path: Path) -> None:
    for suffix in (".jsonl", ".json"):
        path = tmp_path / f"trap{suffix}"
        text = '{"id": "x", "extra": ' + trap + "}"
        path.write_text(text + "\n" if suffix == ".jsonl" else "[" + text + "]", encoding="utf-8")
        with pytest.raises(DataError, match=fragment) as info:
            _loaders()[loader](path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize("loader", sorted(_loaders()))
def test_empty_file_is_named_by_every_loader(loader: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match="empty") as info:
        _loaders()[loader](path)
    assert str(path) in str(info.value)


def test_u2028_inside_strings_is_read_and_survives_a_kb_round_trip(tmp_path: Path) -> None:
    from culturekb.kb.loaders import load_samples_jsonl
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.store import KnowledgeBase

    res = load_samples_jsonl(FILES / "jsonl_u2028_in_string.jsonl")
    assert res.samples[0].explanations == ["the sea\u2028is vast"]
    assert res.samples[1].explanations == ["vast\u2029sea"]
    t = KnowledgeTuple(concept="sea", culture="en", label="awe", distribution={"awe": 1.0}, support=2,
                       rationales=["the sea\u2028is vast", "next\x85line"])
    KnowledgeBase([t], get_scheme("artemis9")).save(tmp_path / "kb")
    assert KnowledgeBase.load(tmp_path / "kb").tuples[0].rationales == t.rationales


# -- images ----------------------------------------------------------------------------------------------------------
def test_images_that_are_not_images_bombs_and_huge_ones(tmp_path: Path) -> None:
    from PIL import Image

    from culturekb._images import check_image_file, image_data_url, load_image

    (tmp_path / "fake.jpg").write_text("<html>not an image</html>", encoding="utf-8")
    (tmp_path / "bomb.png").write_bytes(_png_header(100_000, 100_000))
    (tmp_path / "tall.png").write_bytes(_png_header(20_000, 5_000))  # 100 M pixels: above the default limit
    for name, fragment in (("fake.jpg", "not an image|cannot read image"), ("bomb.png", "decompress"),
                           ("tall.png", "above the limit|decompress")):
        for fn in (check_image_file, load_image, image_data_url):
            with pytest.raises(DataError, match=fragment):
                fn(str(tmp_path / name), "item 1")
    # a big but honest photo is accepted and shrunk, not refused
    Image.new("RGB", (4000, 3000), (10, 120, 200)).save(tmp_path / "big.jpg", quality=70)
    assert check_image_file(str(tmp_path / "big.jpg"), "item 1") == (4000, 3000)
    assert max(load_image(str(tmp_path / "big.jpg"), "item 1", max_side=512).size) == 512


def test_contained_paths_accept_links_that_stay_inside(tmp_path: Path) -> None:
    from culturekb._io import resolve_image_ref

    root = tmp_path / "root"
    (root / "imgs").mkdir(parents=True)
    (root / "imgs" / "a.png").write_bytes(b"x")
    (root / "alias").symlink_to(root / "imgs", target_is_directory=True)
    assert resolve_image_ref("alias/a.png", "row 1", data_root=root).endswith("alias/a.png")
    linked_root = tmp_path / "linked_root"
    linked_root.symlink_to(root, target_is_directory=True)  # the data root itself may be a link
    assert resolve_image_ref("imgs/a.png", "row 1", data_root=linked_root)


# -- review queue export: CSV formula injection --------------------------------------------------------------------
def test_review_export_neutralises_formulas_and_import_reads_them_back(tmp_path: Path) -> None:
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.store import KnowledgeBase

    evil = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]
    tuples = [KnowledgeTuple(concept=c, culture="en", label="awe", distribution={"awe": 1.0}, support=2,
                             rationales=[c], status="pending") for c in evil]
    KnowledgeBase(tuples, get_scheme("artemis9")).save(tmp_path / "kb")
    queue = tmp_path / "queue.csv"
    res = _run(["review", "export", str(tmp_path / "kb"), "--out", str(queue)])
    assert res.exit_code == 0, res.output
    with open(queue, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(evil)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    assert sorted(r["concept"] for r in rows) == sorted("'" + c for c in evil)
    for row in rows:
        row["decision"] = "approve"
    with open(queue, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    res = _run(["review", "import", str(tmp_path / "kb"), str(queue), "--out", str(tmp_path / "kb2")])
    assert res.exit_code == 0, res.output
    assert "approved 6," in res.output


# -- concurrency: two builds into one --out, two writers on one cache ---------------------------------------------
def test_a_second_build_into_the_same_out_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    out = tmp_path / "kb"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from culturekb._io import exclusive_lock
            with exclusive_lock({str(out)!r}, "build", "wait"):
                print("locked", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        res = _run(["build", str(FILES / "build_valid.jsonl"), "--out", str(out), "--cache-dir",
                    str(tmp_path / "cache")])
        assert res.exit_code == 2, res.output
        text = " ".join(res.output.split())
        assert f"another process (pid {holder.pid}) is writing to {out}" in text
        assert not out.exists() and not (tmp_path / "cache" / "steps.sqlite").exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    # the lock goes with its holder: the next build runs
    res = _run(["build", str(FILES / "build_valid.jsonl"), "--out", str(out), "--split", "all", "--min-support", "1",
                "--concepts", "precomputed", "--judges", "lexicon,lexicon", "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output


_WRITER = textwrap.dedent("""
    import sys
    from culturekb.builders._stepcache import StepCache
    from culturekb.models.cache import ResponseCache
    folder, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    steps = StepCache(folder + "/steps.sqlite")
    responses = ResponseCache(folder + "/responses.sqlite")
    for i in range(n):
        steps.put_many("rationales", [(f"{tag}-{i}", {"text": f"{tag} {i}"})])
        responses.put(f"{tag}-{i}", f"answer {tag} {i}")
    steps.close()
    print("done", flush=True)
""")


def test_two_processes_write_one_step_cache_and_one_response_cache(tmp_path: Path) -> None:
    from culturekb.builders._stepcache import StepCache
    from culturekb.models.cache import ResponseCache

    n = 150
    env = {**os.environ, "PYTHONWARNINGS": "error::ResourceWarning"}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), tag, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for tag in ("a", "b")]
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0 and stdout.strip() == "done", stderr
    keys = [f"{tag}-{i}" for tag in ("a", "b") for i in range(n)]
    steps = StepCache(tmp_path / "steps.sqlite")
    try:
        got = steps.get_many("rationales", keys)
    finally:
        steps.close()
    assert got == {k: {"text": k.replace("-", " ")} for k in keys}
    responses = ResponseCache(tmp_path / "responses.sqlite")
    assert all((e := responses.get(k)) is not None and e.text == "answer " + k.replace("-", " ") for k in keys)


def test_a_stale_index_message_keeps_the_case_of_the_kb_path(tmp_path: Path) -> None:
    """The suggested command names the KB folder as the user wrote it (`.capitalize()` lower-cased it)."""
    from culturekb.errors import IndexError_
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import get_scheme
    from culturekb.kb.store import KnowledgeBase
    from culturekb.retrieval.index import IndexMeta, _check_identity

    t = KnowledgeTuple(concept="sea", culture="en", label="awe", distribution={"awe": 1.0}, support=2,
                       rationales=["vast"])
    kb_path = tmp_path / "MyKB_Final"
    kb = KnowledgeBase([t], get_scheme("artemis9"))
    kb.save(kb_path)
    meta = IndexMeta(kb_version="0" * 16, embedder="st:all-MiniLM-L6-v2", dim=384, backend="numpy", count=1,
                     ids=("x",))
    with pytest.raises(IndexError_) as info:
        _check_identity(meta, kb, "st:all-MiniLM-L6-v2", kb_path / "index" / "numpy")
    assert f"Rebuild it with `culturekb index --kb {kb_path} --backend numpy`" in str(info.value)
