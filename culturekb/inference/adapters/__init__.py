"""Harness plug-ins around the Augmenter: lmms-eval, VLMEvalKit and inspect_ai.

Each adapter lives in its own module and imports its harness only when used, so `import culturekb` never pulls
a harness in; a harness that is not installed raises MissingExtraError with the pip line
(``pip install 'culturekb[harness]'``).

* `culturekb.inference.adapters.lmms_eval`: `CultureKBSimple`, `CultureKBChat` (lmms-eval model ``culturekb``);
* `culturekb.inference.adapters.vlmevalkit`: `CultureKBVLM` (a VLMEvalKit ``BaseModel``), `run_vlmevalkit`;
* `culturekb.inference.adapters.inspect_ai`: the solver `culturekb_knowledge`.

All three take one argument vocabulary (`ARGUMENTS`, docs/adapters.md); `harness_args_for(kb_dir)` gives the
ready-to-paste lmms-eval ``--model_args`` string and inspect_ai ``-S`` arguments for a KB.
"""

from __future__ import annotations

import importlib
from typing import Any

from culturekb.inference.adapters._args import ARGUMENTS, DEPRECATED_ALIASES, harness_args_for, kb_version_of
from culturekb.inference.adapters._common import Injection, KnowledgeInjector, prepend_block

__all__ = [
    "ARGUMENTS",
    "DEPRECATED_ALIASES",
    "harness_args_for",
    "kb_version_of",
    "Injection",
    "KnowledgeInjector",
    "prepend_block",
    "CultureKBSimple",
    "CultureKBChat",
    "lmms_eval_manifests",
    "register_lmms_eval",
    "CultureKBVLM",
    "run_vlmevalkit",
    "register_vlmevalkit",
    "culturekb_knowledge",
]

_LAZY = {
    "CultureKBSimple": ("lmms_eval", "CultureKBSimple"),
    "CultureKBChat": ("lmms_eval", "CultureKBChat"),
    "register_lmms_eval": ("lmms_eval", "register"),
    "CultureKBVLM": ("vlmevalkit", "CultureKBVLM"),
    "run_vlmevalkit": ("vlmevalkit", "run_vlmevalkit"),
    "register_vlmevalkit": ("vlmevalkit", "register"),
    "culturekb_knowledge": ("inspect_ai", "culturekb_knowledge"),
}


def lmms_eval_manifests() -> list[Any]:
    """Payload of the ``lmms_eval.models`` entry point: imports only lmms-eval's registry module, so loading the
    entry point while lmms-eval builds its registry stays light and free of import cycles."""
    from lmms_eval.models.registry_v2 import ModelManifest

    module = f"{__name__}.lmms_eval"
    return [ModelManifest(model_id="culturekb", simple_class_path=f"{module}.CultureKBSimple",
                          chat_class_path=f"{module}.CultureKBChat")]


def __getattr__(name: str) -> Any:
    """Import an adapter on first use (raising MissingExtraError when its harness is not installed)."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
