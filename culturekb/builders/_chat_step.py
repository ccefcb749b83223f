"""What the build's chat-model steps share (the LLM judge of step 4, the LLM rationales of step 3): the client, the
scheme, the prompt file in its language, the call parameters, the fault log, and the step's id."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from culturekb._io import stable_hash
from culturekb.builders._faults import FaultLog
from culturekb.kb.schemes import EmotionScheme, get_scheme
from culturekb.models.base import ModelClient
from culturekb.text.prompts import PromptTemplate, load_prompt

__all__ = ["ChatStep"]


class ChatStep:
    """A build step that asks a chat model through a prompt file whose placeholders are checked on load.

    A subclass names its prompt's placeholders in `_REQUIRED` and `_ALLOWED`. `params` (temperature, max_tokens)
    go with every call and into the step's id, so a change of them is a new cache key.
    """

    _REQUIRED: tuple[str, ...] = ()
    _ALLOWED: tuple[str, ...] = ()

    def __init__(self, client: ModelClient, scheme: EmotionScheme | str, *, language: str, prompt: str | Path,
                 retries: int, temperature: float, max_tokens: int, culture_name: Callable[[str], str]) -> None:
        self.client = client
        self.scheme = get_scheme(scheme)
        self.language = language
        self.retries = retries
        self.params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        self.culture_name = culture_name
        self.template: PromptTemplate = load_prompt(prompt, language, required=self._REQUIRED, allowed=self._ALLOWED)
        self.faults = FaultLog()
        """Re-asks and bad answers, and the policy for them (the build sets its own log here)."""

    def _step_id(self, kind: str, *settings: str) -> str:
        """``kind:client:template:scheme[:settings...]:params-hash``, the step's id in reports and cache keys."""
        return ":".join((kind, self.client.id, self.template.id, self.scheme.name, *settings,
                         stable_hash(self.params)[:8]))

    def _label(self, label: str) -> str:
        """A scheme label in the prompt's language."""
        return self.scheme.translate(label, self.language) if self.language != "en" else label
