"""The run spec of ``culturekb eval commet``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.evals.specs import RetrievalSpec, RunSpec

__all__ = ["CommetSpec"]


@dataclass(frozen=True, kw_only=True)
class CommetSpec(RunSpec, RetrievalSpec):
    """``culturekb eval commet``: StoryTurns played as multi-turn chats, each answer judged before the next turn's
    feedback is chosen; settings orig, blind and (with `kb_dir`) kb-cues."""

    data: Path
    model: str = ""
    """The chat model (``openai:MODEL`` ...); CoMMET has no offline answerer."""
    judge: str = "offline"
    """``offline`` (string match, then embedding similarity; weaker) or a judge model (``openai:MODEL``)."""
    judge_base_url: str | None = None
    judge_embedder: str = "minilm"
    """Embedder of the offline judge."""
    judge_threshold: float = 0.6
    """Least cosine similarity for the offline judge's embedding match."""
    judge_retries: int = 2
    setting_names: tuple[str, ...] | None = None
    """Which of orig, kb-cues, blind to run (None: orig, blind when a story is image-dependent, kb-cues with a KB)."""
    concurrency: int | None = None
    """Stories played at once (None: the max_concurrency setting)."""
    max_cues: int = 5
    max_tokens: int = 256
    template_dir: Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model in ("", "kb-prior"):
            raise ConfigError("the CoMMET run needs a chat model: --model openai:NAME --base-url URL (offline: a local "
                              "OpenAI-compatible server, such as culturekb.testing.ScriptedOpenAIServer)")
