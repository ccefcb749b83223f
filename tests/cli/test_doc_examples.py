"""Every shell and Python example of README.md and docs/*.md runs, against the data it names.

The fenced ```bash / ```sh / ```console / ```python blocks are parsed out of the Markdown, so they cannot drift
from it. Each document's blocks run in order in one fresh folder (a block may use what an earlier one made), with
`culturekb` commands run in-process (the CLI's typer app), `curl` calls against the KB the document serves (a
FastAPI test client), model endpoints (`--base-url`, `base_url=`) answered by the scripted OpenAI-compatible
server (`culturekb.testing.openai_server`), and `lmms-eval` in-process. A block right after
``<!-- not run: REASON -->`` is not run (the reason is visible in the Markdown; `NOT_RUN_MAX` keeps that list
short); a block right after ``<!-- file: PATH -->`` (any language) is written to PATH in the folder before the
blocks that follow it run.

Blocks that name the demo KB (`demo-output/kb`) run against the KB of one `culturekb demo` run (the session's
`demo_run`, shared with tests/cli/test_demo.py); the others run against the shipped samples they name, one
document per test. Both are marked slow (all documents: 92 s at a load average of 4-6 on 2 cores, 164 s at 10;
the demo run, 154 s at 4-6, apart); the parser's own test is not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = {"bash", "sh", "console", "python"}
DEMO_KB = "demo-output/kb"
NOT_RUN_MAX = 13  # the blocks marked not run, over every document: keep the list short
# (13: docs/answer-parsing.md's reproduction of the real-answer tables was an indented block the test never saw; as
# a ```bash block it is counted, and it cannot run here: it reads four fetched repositories that are not shipped)
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$", flags=re.S)
_FILE = re.compile(r"<!--\s*file:\s*(\S+)\s*-->\s*$")
_ENDPOINTS = ("http://localhost:8000/v1", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1")
runner = CliRunner()


@dataclass
class Block:
    doc: Path
    line: int
    language: str
    body: str
    not_run: str | None = None
    file: str | None = None
    demo: bool = False  # names the demo KB, or calls a server that serves it

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.file is None and self.not_run is None and self.language in RUN_LANGUAGES

    @property
    def on_demo_kb(self) -> bool:
        return self.demo or DEMO_KB in self.body


def blocks_of(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    found = []
    served: str | None = None
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip()
        last = before.rsplit("\n", 1)[-1]
        not_run = _NOT_RUN.search(last)
        file = _FILE.search(last)
        body = m.group(2)
        serve = re.search(r"culturekb serve --kb (\S+)", body)
        served = serve.group(1) if serve else served
        found.append(Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1).lower(), body,
                           not_run.group(1) if not_run else None, file.group(1) if file else None,
                           demo=served == DEMO_KB and "localhost:8000" in body))
    return found


def all_blocks() -> list[Block]:
    return [b for doc in DOCUMENTS for b in blocks_of(doc)]


# ----------------------------------------------------------------------------------------------------- runner
def _doc_responder(body: dict[str, Any]) -> str:
    """A scripted model that answers each kind of culturekb request in its expected form."""
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        texts += [content] if isinstance(content, str) else [p.get("text", "") for p in content or []
                                                             if isinstance(p, dict)]
    prompt = "\n".join(texts)
    if "most common emotion was" in prompt:  # rationale generation: a JSON list of sentences
        return json.dumps(["The scene recalls a quiet evening at home.", "People of this culture find it calm."])
    return json.dumps({"emotion": "contentment", "label": "contentment", "answer": "contentment",
                       "reason": "a calm scene"})


@dataclass
class Shell:
    """What one document's blocks share: the folder, the served KB, the scripted model server, the environment."""

    cwd: Path
    served_kb: Path | None
    monkeypatch: pytest.MonkeyPatch
    model_server: Callable[..., Any]
    servers: dict[str, str] = field(default_factory=dict)  # endpoint in the docs -> scripted server's base URL
    api_client: Any = None

    started: list[Any] = field(default_factory=list)  # the scripted servers, in order

    def endpoint(self) -> str:
        if "default" not in self.servers:
            self.started.append(self.model_server(_doc_responder))
            self.servers["default"] = self.started[-1].base_url
        return self.servers["default"]

    def rewrite(self, arg: str) -> str:
        for url in _ENDPOINTS:
            if url in arg:
                arg = arg.replace(url, self.servers.get(url) or self.endpoint())
        return arg

    # -- one command line
    def run_line(self, line: str) -> None:
        argv = shlex.split(line, comments=True)
        if not argv:
            return
        if argv[-1] == "&":
            argv = argv[:-1]
        prefix: dict[str, str] = {}
        while argv and re.fullmatch(r"[A-Za-z_]\w*=.*", argv[0]):  # VAR=value command: for that command only
            name, value = argv.pop(0).split("=", 1)
            prefix[name] = str(self.cwd / value) if value.startswith("./") else value
        argv = [self.rewrite(a) for a in argv]
        handler = {"culturekb": self.culturekb, "curl": self.curl, "export": self.export, "source": self.source,
                   "python": self.python, "lmms-eval": self.lmms_eval}.get(argv[0])
        if handler is None:
            raise AssertionError(f"no way to run `{argv[0]}` here; mark the block <!-- not run: WHY --> if it "
                                 "cannot run offline")
        before = {k: os.environ.get(k) for k in prefix}
        os.environ.update(prefix)
        try:
            handler(argv[1:])
        finally:
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def source(self, args: list[str]) -> None:
        assert args == [".venv/bin/activate"], f"source {args}: only the venv's activate script is known here"

    def export(self, args: list[str]) -> None:
        for arg in args:
            name, value = arg.split("=", 1)
            self.monkeypatch.setenv(name, "test-key" if value == "..." else value)

    def culturekb(self, args: list[str]) -> None:
        if args[:1] == ["serve"]:
            kb = args[args.index("--kb") + 1]
            self.served_kb = self.cwd / kb
            self.api_client = None
            status = [a for i, a in enumerate(args) if i and args[i - 1] == "--status"]
            self._client(status[0] if status else None).get("/readyz").raise_for_status()
            return
        if args[:1] == ["mock-server"]:
            from culturekb.testing.openai_server import ScriptedOpenAIServer, load_script

            def opt(name: str) -> str | None:
                return args[args.index(name) + 1] if name in args else None

            answers = opt("--answers")
            script: Any = load_script(self.cwd / answers) if answers else [opt("--answer") or '{"answer": "ok"}']
            server = self.model_server(script, latency_s=float(opt("--latency") or 0))
            assert isinstance(server, ScriptedOpenAIServer)
            self.servers[f"http://127.0.0.1:{opt('--port')}/v1"] = server.base_url
            return
        result = runner.invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 0, f"culturekb {shlex.join(args)} -> exit {result.exit_code}\n{result.output}"

    def _client(self, status: str | None = None) -> Any:
        if self.api_client is None:
            from fastapi.testclient import TestClient

            from culturekb.api import create_app

            assert self.served_kb is not None, "a curl call before any `culturekb serve --kb KB` in this document"
            kwargs: dict[str, Any] = {"status": status} if status else {}
            self.api_client = TestClient(create_app(self.served_kb, **kwargs))
        return self.api_client

    def curl(self, args: list[str]) -> None:
        method, headers, data, url = "GET", {}, None, None
        i = 0
        while i < len(args):
            a = args[i]
            if a == "-X":
                method, i = args[i + 1], i + 1
            elif a == "-H":
                k, v = args[i + 1].split(":", 1)
                headers[k.strip()] = os.path.expandvars(v.strip())
                i += 1
            elif a == "-d":
                data, i = args[i + 1], i + 1
            elif not a.startswith("-"):
                url = a
            i += 1
        assert url and re.match(r"(http://)?(localhost|127\.0\.0\.1):8000/", url), f"curl to {url}: not the server"
        path = "/" + url.split("/", 3 if url.startswith("http") else 1)[-1]
        if method == "GET" and data is None:
            r = self._client().get(path, headers=headers)
        else:
            r = self._client().request(method, path, headers=headers, content=data)
        if "/admin/" in path:  # without keys configured: refused, not a crash
            assert r.status_code in (401, 403), (path, r.status_code, r.text)
            return
        assert r.status_code == 200, f"curl {path} -> {r.status_code}: {r.text[:500]}"

    def python(self, args: list[str]) -> None:
        assert args[:1] == ["-c"], f"python {args[:2]}: only `python -c CODE` runs here"
        exec(compile(args[1], "<python -c>", "exec"), {"__name__": "__main__"})  # noqa: S102

    def lmms_eval(self, args: list[str]) -> None:
        from lmms_eval.__main__ import cli_evaluate

        self.monkeypatch.setattr(sys, "argv", ["lmms-eval", *args])
        cli_evaluate()


def run_block(block: Block, shell: Shell) -> None:
    if block.language == "python":
        source = block.body
        for url in _ENDPOINTS:
            source = source.replace(url, shell.rewrite(url))
        exec(compile(source, block.where, "exec"), {"__name__": "__main__"})  # noqa: S102
        return
    joined = re.sub(r"\\\n\s*", " ", block.body)
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            shell.run_line(line)


def run_document(blocks: list[Block], shell: Shell, select: Callable[[Block], bool]) -> list[str]:
    """Run the selected blocks in order (writing the file blocks on the way); the failures, one per block."""
    failures = []
    for block in blocks:
        if block.file is not None:
            target = shell.cwd / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
            continue
        if not block.runs or not select(block):
            continue
        start = time.perf_counter()
        try:
            run_block(block, shell)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - every block's failure is reported
            failures.append(f"{block.where}: {type(exc).__name__}: {exc}")
        print(f"{block.where}: {time.perf_counter() - start:.1f} s")  # shown with -s or on failure
    return failures


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One step and response cache for every document: the same sample built twice is built once."""
    return tmp_path_factory.mktemp("doc-cache")


@pytest.fixture
def shell_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: Any,
              shared_cache: Path) -> Callable[..., Shell]:
    def make(served_kb: Path | None = None) -> Shell:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(shared_cache))
        return Shell(tmp_path, served_kb, monkeypatch, openai_server)

    return make


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    from culturekb.kb.cultures import reset_default_registry

    yield
    reset_default_registry()  # a block's cultures file or KB may register cultures


# ------------------------------------------------------------------------------------------------------ tests
def test_the_blocks_are_found_and_the_not_run_list_is_short() -> None:
    blocks = all_blocks()
    runnable = [b for b in blocks if b.language in RUN_LANGUAGES and b.file is None]
    assert len(runnable) >= 30, "the parser lost the docs' examples"
    not_run = [b for b in runnable if b.not_run]
    assert len(not_run) <= NOT_RUN_MAX, "\n".join(f"{b.where}: {b.not_run}" for b in not_run)
    assert all(len(b.not_run or "") >= 10 for b in not_run), "a not-run marker says why"
    # a marker that is not right before a fence is a typo: it would mark nothing
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"<!--\s*(not run|file):", text):
            after = text[m.start():].split("-->", 1)[1].lstrip("\n ")
            assert after.startswith("```"), f"{doc.name}: a `{m.group(1)}` marker not followed by a fenced block"


_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:[A-Za-z_]\w*=\S*\s+)*(?:culturekb|python3?)(?:\s|$)")
"""A `culturekb` or `python` command line (after an optional prompt and VAR=value prefixes)."""


def commands_outside_run_blocks(doc: Path) -> list[str]:
    """Command lines the doc-example test would never run: in a fenced block of a language it does not run
    (```text, ```shell, no language ...) or in an indented code block (4 spaces or a tab outside any fence)."""
    text = doc.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        if m.group(1).lower() in RUN_LANGUAGES:
            continue
        first = text.count("\n", 0, m.start()) + 2
        found += [f"{doc.name}:{first + i} (```{m.group(1)} block): {line.strip()}"
                  for i, line in enumerate(m.group(2).splitlines()) if _COMMAND.match(line)]
    outside = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # the fences blanked, lines kept
    found += [f"{doc.name}:{i} (indented block): {line.strip()}" for i, line in enumerate(outside.splitlines(), 1)
              if re.match(r"( {4,}|\t)", line) and _COMMAND.match(line)]
    return found


def test_no_command_hides_from_the_runner() -> None:
    """Every `culturekb` or `python` command line of the docs is in a block the runner runs (or marks not run):
    none in a ```text block or an indented block, where it would escape this test."""
    hidden = [hit for doc in DOCUMENTS for hit in commands_outside_run_blocks(doc)]
    assert not hidden, ("put these in a ```bash block (marked <!-- not run: WHY --> if it cannot run offline):\n"
                        + "\n".join(hidden))


def test_the_hidden_command_check_can_fail(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("Run\n\n```text\n$ culturekb build DATA --out KB\n```\n\nthen\n\n    python bench.py\n\n"
                   "```bash\nculturekb index --kb KB\n```\n  - a list item, not code\n", encoding="utf-8")
    assert commands_outside_run_blocks(doc) == ["x.md:4 (```text block): $ culturekb build DATA --out KB",
                                                "x.md:9 (indented block): python bench.py"]


def _lmms_eval_recipe_sent_the_knowledge(shell: Shell) -> None:
    """docs/adapters.md's offline lmms-eval task: both documents went to the model with the KB's block first, and
    the sidecar names what was injected."""
    from culturekb.inference.adapters._sidecar import read_sidecar

    rows = {r["sample_id"]: r for r in read_sidecar(shell.cwd / "lmms_out")}
    assert set(rows) == {0, 1} and {"en::house"} <= set(rows[0]["tuple_ids"]), rows
    assert rows[0]["concepts"] == ["house", "moon"] and rows[0]["task"] == "my_task"
    [server] = shell.started
    users = [m["content"] for body in server.requests for m in body["messages"] if m["role"] == "user"]
    texts = [c if isinstance(c, str) else " ".join(p.get("text", "") for p in c) for c in users]
    assert len(texts) == 2 and all(t.startswith("Notes from the annotations of people of the") for t in texts)
    [house] = [t for t in texts if "A house under the full moon." in t]  # the requests may come in any order
    assert "- house: mostly contentment" in house and house.endswith("Answer with one word.")


def _kb_embedded_by_the_server(shell: Shell) -> None:
    """docs/scaling.md's server-embedded KB: the vectors came from the (scripted) server, and the index records the
    server's embedder spec, which the API rebuilt to serve."""
    [server] = shell.started
    assert server.embedding_calls > 0, "the build and index never called the embeddings server"
    recorded = [p for p in (shell.cwd / "tei-kb").rglob("*.json") if "openai-embed:bge-small" in p.read_text()]
    assert recorded, "no file of the KB records the embedder spec openai-embed:bge-small"


AFTER = {"adapters.md": _lmms_eval_recipe_sent_the_knowledge,  # what a document's examples must have done
         "scaling.md": _kb_embedded_by_the_server}


@pytest.mark.slow  # all documents: 92 s at a load average of 4-6 on 2 cores, 164 s at 10 (KB builds, sample evals)
@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: p.name)
def test_every_example_runs(doc: Path, shell_for: Callable[..., Shell]) -> None:
    blocks = blocks_of(doc)
    shell = shell_for()
    failures = run_document(blocks, shell, lambda b: not b.on_demo_kb)
    assert not failures, "\n\n".join(failures)
    if doc.name in AFTER:
        AFTER[doc.name](shell)


@pytest.mark.slow
def test_every_example_on_the_demo_kb_runs(demo_run: tuple[Path, str], shell_for: Callable[..., Shell]) -> None:
    out, _ = demo_run
    shell = shell_for()
    (shell.cwd / "demo-output").mkdir()
    (shell.cwd / DEMO_KB).symlink_to(out / "kb", target_is_directory=True)
    shell.served_kb = shell.cwd / DEMO_KB  # the README's server serves the demo KB
    ran: list[str] = []
    failures = []
    for doc in DOCUMENTS:
        blocks = blocks_of(doc)
        ran += [b.where for b in blocks if b.runs and b.on_demo_kb]
        failures += run_document(blocks, shell, lambda b: b.on_demo_kb)
    assert len(ran) >= 3, ran
    assert not failures, "\n\n".join(failures)
