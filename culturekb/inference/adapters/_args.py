"""One argument vocabulary for the harness adapters (lmms-eval, VLMEvalKit, inspect_ai), its deprecated spellings,
and the ready-to-paste arguments for a KB (`harness_args_for`).

Every adapter takes the same names for the same things (`ARGUMENTS`; docs/adapters.md has the table). Older
spellings (`kb_dir`, `kb_template`, `kb_tau`, `kb_backend`, `kb_embedder`) still work for one release: each is
renamed with a `FutureWarning` that names the new spelling (`canonical_args`).
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError

__all__ = ["AdapterArg", "ARGUMENTS", "DEPRECATED_ALIASES", "canonical_args", "harness_args_for", "kb_version_of"]


@dataclass(frozen=True)
class AdapterArg:
    """One argument of the adapters' shared vocabulary: its name, default (as written) and meaning."""

    name: str
    default: str
    meaning: str
    adapters: str = "all"
    """Which adapters take it ("all", or a comma-separated list of lmms-eval, VLMEvalKit, inspect_ai)."""


ARGUMENTS: tuple[AdapterArg, ...] = (
    AdapterArg("kb", "(required)", "the KB directory"),
    AdapterArg("kb_version", "read from the KB", "when given, must equal the KB's version (`culturekb kb info KB`); "
               "either way the version is part of the model's identity and cache key"),
    AdapterArg("culture", "none", "default culture (id or alias) for documents without one"),
    AdapterArg("culture_field", "culture", "document field with each document's culture (dotted names reach nested "
               "fields; `none`: always the default)"),
    AdapterArg("concepts_field", "concepts", "document field with the concepts (a list, or one string split at , ; |); "
               "without it the concepts come from the prompt text (question and options apart, instruction words "
               "dropped)"),
    AdapterArg("prompt_language", "the culture's language", "language of the knowledge header (`en`, `zh` ...): give "
               "the benchmark's prompt language so an English prompt gets an English header whatever the culture"),
    AdapterArg("mode", "know", "know, random-know, cross-culture-know, orig, internal-know"),
    AdapterArg("status", "the `status` setting (all)", "which tuples are injected: all, accepted, pending"),
    AdapterArg("template", "harness_knowledge", "header template name or file (`none`: the bare lines)"),
    AdapterArg("tau", "the `tau` setting", "similarity threshold of semantic matches"),
    AdapterArg("backend", "the KB's index", "vector store of the KB's index (faiss, qdrant)"),
    AdapterArg("embedder", "the index's own", "embedder spec of the index"),
    AdapterArg("on_unknown_culture", "error", "`skip` sends a document of a culture the KB lacks without knowledge"),
    AdapterArg("sidecar", "beside the harness's outputs", "path (file or folder) of `culturekb_injections.jsonl`; "
               "`none` writes none"),
    AdapterArg("inner_model", "(required)", "the registered lmms-eval model to wrap", "lmms-eval"),
    AdapterArg("model", "(required)", "a supported_VLM name, factory or BaseModel to wrap", "VLMEvalKit"),
    AdapterArg("question_field", "question", "row column whose text the concepts come from", "VLMEvalKit"),
    AdapterArg("placement", "prompt", "`prompt` (before the user text) or `system` (a system message)", "inspect_ai"),
    AdapterArg("then_generate", "false", "call the model after adding the block (`inspect eval --solver`)",
               "inspect_ai"),
)
"""The shared vocabulary (docs/adapters.md shows it as a table; a test checks the two agree)."""

DEPRECATED_ALIASES: dict[str, str] = {
    "kb_dir": "kb",
    "kb_template": "template",
    "kb_tau": "tau",
    "kb_backend": "backend",
    "kb_embedder": "embedder",
}
"""Old spelling -> the name every adapter takes now."""


def canonical_args(given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`given` with deprecated spellings renamed (a FutureWarning for each); both spellings at once is an error.

    Values that are None stay out, so the caller's defaults apply."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        new = DEPRECATED_ALIASES.get(key)
        if new is None:
            if value is not None:
                out[key] = value
            continue
        if value is None:
            continue
        if given.get(new) is not None:
            raise ConfigError(f"{where}: both {key}= and {new}= were given; {key} is the old spelling of {new}, "
                              f"give only {new}")
        warnings.warn(f"{where}: {key}= is deprecated; use {new}= (same meaning)", FutureWarning, stacklevel=3)
        out[new] = value
    return out


def kb_version_of(kb_dir: str | Path) -> str:
    """The version of the KB in `kb_dir`, read from its manifest (the tuples are not loaded)."""
    from culturekb.kb.store import read_manifest

    if not Path(kb_dir).is_dir():
        raise ConfigError(f"KB directory {kb_dir} does not exist; build one with `culturekb build` or fix the path")
    return read_manifest(kb_dir).kb_version


def harness_args_for(kb_dir: str | Path, **options: Any) -> dict[str, str]:
    """Ready-to-paste adapter arguments for a KB, its version looked up.

    Keys: ``kb_version``; ``lmms_eval`` (the ``--model_args`` string, with ``inner_model=INNER`` to replace and
    the inner model's own arguments to add); ``inspect_ai`` (the ``-S`` solver arguments of
    ``inspect eval --solver culturekb/culturekb_knowledge``); ``vlmevalkit`` (the keyword arguments of
    ``run_vlmevalkit``/``CultureKBVLM``). `options` (names of the shared vocabulary, e.g. ``culture="zh"``,
    ``prompt_language="en"``) are added to each; None values are left out. The KB path is made absolute (the
    harness may run elsewhere) and the inspect_ai arguments are shell-quoted.
    """
    known = {a.name for a in ARGUMENTS}
    opts = canonical_args(options, "harness_args_for")
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ConfigError(f"harness_args_for: unknown argument(s) {unknown}; use names of {sorted(known)}")
    kb = str(Path(kb_dir).expanduser().resolve())  # absolute: the harness may run from another folder
    version = kb_version_of(kb)
    common = {"kb": kb, "kb_version": version, **{k: str(v) for k, v in opts.items() if k not in ("kb", "kb_version")}}
    lmms = {"inner_model": str(common.pop("inner_model", "INNER")), **common}
    for only in ("model", "question_field", "placement", "then_generate"):
        lmms.pop(only, None)
    inspect_args = {k: v for k, v in common.items() if k not in ("inner_model", "model", "question_field")}
    if "then_generate" not in inspect_args:
        inspect_args["then_generate"] = "true"
    vlm = {k: v for k, v in common.items() if k not in ("inner_model", "placement", "then_generate")}
    return {
        "kb_version": version,
        "lmms_eval": ",".join(f"{k}={v}" for k, v in lmms.items()),
        "inspect_ai": " ".join(f"-S {shlex.quote(f'{k}={v}')}" for k, v in inspect_args.items()),
        "vlmevalkit": ", ".join(f"{k}={v!r}" for k, v in vlm.items()),
    }
