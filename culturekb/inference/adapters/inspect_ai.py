"""inspect_ai plug-in: the solver `culturekb_knowledge`, which adds the knowledge block to a sample's messages.

    from inspect_ai.solver import generate
    from culturekb.inference.adapters.inspect_ai import culturekb_knowledge

    Task(dataset=..., solver=[culturekb_knowledge(kb="./kb", culture_field="culture"), generate()], ...)

or, with the ``inspect_ai`` entry point installed, from the command line (the task's solver is replaced, so
``then_generate=true`` makes the solver call the model itself)::

    inspect eval task.py --model openai/gpt-4o --solver culturekb/culturekb_knowledge \\
        -S kb=./kb -S culture_field=culture -S prompt_language=en -S then_generate=true

Each sample's culture comes from its metadata (`culture_field`, dotted names reach nested dicts) or the default
`culture`; its concepts from the metadata (`concepts_field`) or the text of the user prompt. What was injected
(KB version, status filter, culture, concepts, tuple ids and their review status) is kept in the sample's store
under ``culturekb`` and so in the log, and one line per sample goes to ``culturekb_injections.jsonl`` beside the
log file (`sidecar`). ``-S status=accepted`` injects reviewed knowledge only. The arguments are the adapters'
shared vocabulary (docs/adapters.md); ``kb_dir`` is the deprecated spelling of ``kb``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from culturekb.errors import ConfigError, MissingExtraError
from culturekb.inference.adapters._args import canonical_args
from culturekb.inference.adapters._common import HARNESS_EXTRA, KnowledgeInjector, prepend_block
from culturekb.inference.adapters._sidecar import SidecarWriter, sidecar_path, sidecar_row

try:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentText
    from inspect_ai.solver import Generate, Solver, TaskState, solver
except ImportError as exc:  # pragma: no cover - exercised through a subprocess without inspect_ai
    raise MissingExtraError("inspect-ai", HARNESS_EXTRA, "the inspect_ai adapter") from exc

__all__ = ["culturekb_knowledge", "STORE_KEY"]

STORE_KEY = "culturekb"
"""Key of the sample store entry that records what was injected."""


def _add_to_user_prompt(state: TaskState, block: str) -> None:
    for message in state.messages:
        if isinstance(message, ChatMessageUser):
            if isinstance(message.content, str):
                message.content = prepend_block(block, message.content)
            else:
                parts = list(message.content)
                texts = [(i, p) for i, p in enumerate(parts) if isinstance(p, ContentText)]
                if not texts:
                    parts.append(ContentText(text=block))
                else:
                    i, first = texts[0]
                    parts[i] = ContentText(text=prepend_block(block, first.text))
                message.content = parts
            return
    raise ConfigError(f"sample {state.sample_id}: no user message to add the knowledge block to")


def _add_system_message(state: TaskState, block: str) -> None:
    last_system = max((i for i, m in enumerate(state.messages) if isinstance(m, ChatMessageSystem)), default=-1)
    state.messages.insert(last_system + 1, ChatMessageSystem(content=block))


def _default_sidecar() -> Path | None:
    """The folder of the running eval's log file (None outside an eval, or for a log that is not a local file)."""
    try:
        from inspect_ai.log._samples import sample_active
    except ImportError:  # pragma: no cover - an inspect_ai without it: no default sidecar
        return None
    active = sample_active()
    location = getattr(active, "log_location", None) if active is not None else None
    if not location or "://" in str(location) and not str(location).startswith("file://"):
        return None
    return Path(str(location).removeprefix("file://")).parent


@solver
def culturekb_knowledge(
    kb: str | None = None,
    culture_field: str | None = "culture",
    culture: str | None = None,
    concepts_field: str | None = "concepts",
    mode: str = "know",
    on_unknown_culture: Literal["error", "skip"] = "error",
    placement: Literal["prompt", "system"] = "prompt",
    template: str | None = "harness_knowledge",
    kb_version: str | None = None,
    backend: str | None = None,
    embedder: str | None = None,
    tau: float | None = None,
    then_generate: bool = False,
    status: str | None = None,
    prompt_language: str | None = None,
    sidecar: str | None = None,
    kb_dir: str | None = None,
) -> Solver:
    """Add the culture's knowledge block to each sample: before the user prompt's text (`placement="prompt"`)
    or as a system message after any others (`placement="system"`).

    Args:
      kb: the KB directory.
      culture_field: sample metadata field with the sample's culture (None: always `culture`).
      culture: default culture for samples without one.
      concepts_field: sample metadata field with the concepts (a list or one string separated by , ; |);
        without it the concepts are taken from the user prompt's text (question and options apart, instruction
        sentences left out).
      mode: an Augmenter mode (know, random-know, cross-culture-know, orig, internal-know).
      on_unknown_culture: "error", or "skip" to send a sample of a culture the KB lacks without knowledge.
      placement: "prompt" or "system".
      template: header template of the block (None: the bare block).
      kb_version: when given, must match the KB's version (left out: read from the KB; recorded either way).
      backend: vector store of the KB's index (None: the backend setting, else the KB's only index).
      embedder: embedder spec of the index (None: the one the index records).
      tau: similarity threshold of semantic matches (None: the tau setting, else the retriever's default).
      then_generate: call the model after adding the block (for ``inspect eval --solver``).
      status: which tuples are injected: "all" (every tuple but rejected ones, pending ones marked unreviewed),
        "accepted" (reviewed knowledge only) or "pending" (None: the ``status`` setting, "all").
      prompt_language: language of the block's header (the task's prompt language; None: the culture's).
      sidecar: folder or ``.jsonl`` path of the per-sample sidecar ``culturekb_injections.jsonl``; None: the
        folder of the eval's log file; "none": no sidecar.
      kb_dir: deprecated spelling of `kb`.
    """
    args = canonical_args({"kb": kb, "kb_dir": kb_dir}, "solver culturekb_knowledge")
    if "kb" not in args:
        raise ConfigError("solver culturekb_knowledge: kb is required; give the KB directory (-S kb=./kb)")
    if placement not in ("prompt", "system"):
        raise ConfigError(f"placement must be 'prompt' or 'system', got {placement!r}")
    injector = KnowledgeInjector.open(
        args["kb"], backend=backend, embedder=embedder, tau=tau, culture=culture, culture_field=culture_field,
        concepts_field=concepts_field, mode=mode, on_unknown_culture=on_unknown_culture, template=template,
        status=status, prompt_language=prompt_language,
    )
    injector.check_version(kb_version, "solver culturekb_knowledge")
    explicit = sidecar_path(sidecar) if sidecar is not None else None
    off = sidecar is not None and explicit is None

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        text = state.user_prompt.text if any(isinstance(m, ChatMessageUser) for m in state.messages) else ""
        inj = injector.inject_many([(state.metadata, text, f"sample {state.sample_id}")])[0]
        if inj.block:
            if placement == "system":
                _add_system_message(state, inj.block)
            else:
                _add_to_user_prompt(state, inj.block)
        state.store.set(STORE_KEY, {"kb_version": injector.kb_version, "mode": mode, "status_filter": injector.status,
                                    **inj.to_dict()})
        where = None if off else explicit or _default_sidecar()
        if where is not None:
            SidecarWriter(where).write([sidecar_row("inspect_ai", state.sample_id, inj, injector.kb_version,
                                                    {"epoch": state.epoch})])
        return await generate(state) if then_generate else state

    return solve
