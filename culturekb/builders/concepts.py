"""Model-backed concept extraction (paper step 1) and the extractor factory.

Four `ConceptExtractor`s, chosen by `make_concept_extractor(spec)`:

- ``precomputed`` and ``text``: the offline extractors of the text layer (`culturekb.text.concepts`);
- ``vlm``: the paper's way, a vision-language model lists the concepts of the image;
- ``clip``: zero-shot tagging of the image over a fixed vocabulary with an open_clip model from a local
  checkpoint.

Every extractor has a stable `id` that includes its parameters; the build uses it in cache keys.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from culturekb import registry
from culturekb._io import sha256_file, sha256_text, stable_hash
from culturekb.errors import ConfigError, DataError, ModelOutputError, require
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient
from culturekb.models.json_output import complete_json_batch
from culturekb.text.concepts import (
    ConceptExtractor,
    PrecomputedConcepts,
    TextConceptExtractor,
    check_positive,
    dedup_concepts,
)
from culturekb.text.normalise import normalise_concept
from culturekb.text.prompts import PromptTemplate, resolve_prompt

__all__ = [
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "VLMConceptExtractor",
    "ClipConceptExtractor",
    "make_concept_extractor",
]

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------------------
# VLM
# ----------------------------------------------------------------------------------------------------------
_PROMPT_ALIASES = {"concepts": "concept_extraction"}


def _validate_concept_list(max_concepts: int, language: str = "en") -> Callable[[Any], list[str]]:
    """A validator for the VLM's answer: a JSON list (or {"concepts": [...]}) of 1.. strings."""

    def validate(obj: Any) -> list[str]:
        if isinstance(obj, dict) and len(obj) == 1:
            obj = next(iter(obj.values()))
        if not isinstance(obj, list):
            raise ValueError(f"expected a JSON list of strings, got {type(obj).__name__}")
        if not all(isinstance(x, str) for x in obj):
            raise ValueError("every item of the list must be a string")
        concepts = dedup_concepts([normalise_concept(x, language) for x in obj], limit=max_concepts)
        if obj and not concepts:
            raise ValueError("none of the listed items is a usable concept (all empty or stopwords)")
        return concepts

    return validate


class VLMConceptExtractor:
    """The paper's step 1: a vision-language model lists each image's salient concepts as a JSON list.

    `prompt`: a packaged template name ("concepts" = concept_extraction) or the path of your own template
    (placeholder `{max_concepts}`); `language` picks the packaged template's language and the normalisation
    rules of the answers. Images are sent as JPEG data URLs, resized to at most `max_side` pixels.
    A malformed answer is retried (`retries`), then raises ModelOutputError.
    """

    def __init__(
        self,
        client: ModelClient,
        prompt: str | Path = "concepts",
        max_concepts: int = 10,
        language: str = "en",
        max_side: int = 768,
        retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> None:
        check_positive("max_concepts", max_concepts, "VLMConceptExtractor")
        self.client = client
        self.max_concepts = max_concepts
        self.language = language
        self.max_side = max_side
        self.retries = retries
        self.params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        name = _PROMPT_ALIASES.get(str(prompt), prompt)
        self.template: PromptTemplate = resolve_prompt(name, language, required=(), allowed=("max_concepts",))
        self.id = (
            f"vlm:{client.id}:{self.template.id}:k{max_concepts}:px{max_side}"
            f":{stable_hash(self.params)[:8]}"
        )

    def _messages(self, sample: Sample) -> list[dict[str, Any]]:
        from culturekb._images import image_data_url

        if not sample.image:
            raise DataError(
                f"sample {sample.id!r} has no image; the 'vlm' concept extractor needs Sample.image "
                "(a path or URL), or use the 'text' extractor for text-only samples"
            )
        url = image_data_url(sample.image, where=f"sample {sample.id!r}", max_side=self.max_side)
        text = self.template.fill({"max_concepts": self.max_concepts})
        return [
            {
                "role": "user",
                "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
            }
        ]

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        """The concepts of each image, from one VLM call each (batched), validated and normalised."""
        if not samples:
            return []
        batch = [self._messages(s) for s in samples]
        try:
            return complete_json_batch(
                self.client,
                batch,
                _validate_concept_list(self.max_concepts, self.language),
                retries=self.retries,
                **self.params,
            )
        except ModelOutputError as exc:
            raise ModelOutputError(f"concept extraction with {self.client.id}: {exc}") from exc


# ----------------------------------------------------------------------------------------------------------
# CLIP zero-shot tagging
# ----------------------------------------------------------------------------------------------------------
def _file_fingerprint(path: Path) -> str:
    """SHA-256 of small files; of size + first and last MiB for large ones (checkpoints are hundreds of MB)."""
    size = path.stat().st_size
    if size <= 8 << 20:
        return sha256_file(path)[:16]
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
        fh.seek(-(1 << 20), 2)
        tail = fh.read()
    import hashlib

    return hashlib.sha256(str(size).encode() + head + tail).hexdigest()[:16]


class ClipConceptExtractor:
    """Zero-shot tagging with open_clip: the `top_k` vocabulary concepts most probable for each image.

    Text prompts are `template.format(concept=...)` ("a painting with {concept}"). Weights come from a local
    checkpoint file (`checkpoint`, loaded with `open_clip.create_model_and_transforms(model_name,
    pretrained=path)`) or a ready `model` with its `preprocess` and `tokenizer`; nothing is ever downloaded.
    Concepts with probability below `min_prob` are dropped.
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        model_name: str = "ViT-B-32",
        checkpoint: str | Path | None = None,
        top_k: int = 5,
        min_prob: float = 0.0,
        device: str = "cpu",
        model: Any = None,
        preprocess: Callable[[Any], Any] | None = None,
        tokenizer: Callable[[list[str]], Any] | None = None,
        template: str = "a painting with {concept}",
        batch_size: int = 32,
        model_id: str | None = None,
    ) -> None:
        check_positive("top_k", top_k, "ClipConceptExtractor")
        check_positive("batch_size", batch_size, "ClipConceptExtractor")
        if not 0.0 <= min_prob < 1.0:
            raise ConfigError(f"ClipConceptExtractor: min_prob must be in [0, 1), got {min_prob}")
        if "{concept}" not in template:
            raise ConfigError(f"ClipConceptExtractor: template {template!r} needs a '{{concept}}' placeholder")
        vocab = dedup_concepts([normalise_concept(v, "en") for v in vocabulary])
        if not vocab:
            raise ConfigError("ClipConceptExtractor: the vocabulary is empty; give a list of concept strings")
        if model is None:
            if checkpoint is None:
                raise ConfigError(
                    f"ClipConceptExtractor: no weights for {model_name!r}; pass checkpoint=<path to a local "
                    "open_clip checkpoint file (.pt/.bin/.safetensors)> or a loaded model= with preprocess= and "
                    "tokenizer=. Weights are never downloaded."
                )
            checkpoint = Path(checkpoint)
            if not checkpoint.is_file():
                raise ConfigError(
                    f"ClipConceptExtractor: checkpoint file {checkpoint} does not exist; give the path of a local "
                    f"open_clip checkpoint for {model_name!r} (weights are never downloaded)"
                )
            weights = f"{checkpoint.name}#{_file_fingerprint(checkpoint)}"
        else:
            if preprocess is None or tokenizer is None:
                raise ConfigError("ClipConceptExtractor: a given model= also needs preprocess= and tokenizer=")
            weights = model_id or "custom"
        self.vocabulary = tuple(vocab)
        self.model_name = model_name
        self.checkpoint = checkpoint
        self.top_k = top_k
        self.min_prob = float(min_prob)
        self.device = device
        self.template = template
        self.batch_size = batch_size
        self._model = model
        self._preprocess = preprocess
        self._tokenizer = tokenizer
        self._text_features: Any = None
        self.id = (
            f"clip:{model_name}:{weights}:k{top_k}:p{self.min_prob:g}"
            f":v{stable_hash(list(self.vocabulary))[:10]}:t{sha256_text(template)[:8]}"
        )

    def _load(self) -> None:
        if self._model is not None:
            return
        open_clip: Any = require("open_clip", "vision", "CLIP concept extraction")
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                self.model_name, pretrained=str(self.checkpoint), device=self.device
            )
            tokenizer = open_clip.get_tokenizer(self.model_name)
        except (RuntimeError, ValueError, KeyError, OSError, pickle.UnpicklingError) as exc:
            reason = " ".join(str(exc).split())[:400]
            raise ConfigError(
                f"ClipConceptExtractor: cannot load open_clip model {self.model_name!r} from {self.checkpoint} "
                f"({type(exc).__name__}: {reason}); check that the file is an open_clip checkpoint (a state_dict) "
                "for this architecture (see open_clip.list_models())"
            ) from exc
        self._model, self._preprocess, self._tokenizer = model, preprocess, tokenizer

    def _encode_text(self) -> Any:
        import torch

        if self._text_features is None:
            assert self._tokenizer is not None
            prompts = [self.template.format(concept=c) for c in self.vocabulary]
            with torch.no_grad():
                tokens = self._tokenizer(prompts).to(self.device)
                feats = self._model.encode_text(tokens).float()
                self._text_features = feats / feats.norm(dim=-1, keepdim=True)
        return self._text_features

    def probabilities(self, samples: Sequence[Sample]) -> Any:
        """Shape (len(samples), len(vocabulary)): softmax over the vocabulary for each image (numpy)."""
        import numpy as np
        import torch

        from culturekb._images import load_image

        self._load()
        self._model.eval()
        assert self._preprocess is not None
        text = self._encode_text()
        scale = float(self._model.logit_scale.exp().item()) if hasattr(self._model, "logit_scale") else 100.0
        rows: list[Any] = []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start : start + self.batch_size]
            images = []
            for s in chunk:
                if not s.image:
                    raise DataError(f"sample {s.id!r} has no image; the 'clip' concept extractor needs Sample.image")
                images.append(self._preprocess(load_image(s.image, where=f"sample {s.id!r}")))
            with torch.no_grad():
                feats = self._model.encode_image(torch.stack(images).to(self.device)).float()
                feats = feats / feats.norm(dim=-1, keepdim=True)
                rows.append(torch.softmax(scale * feats @ text.T, dim=-1).cpu().numpy())
        if not rows:
            return np.zeros((0, len(self.vocabulary)), dtype=np.float32)
        return np.concatenate(rows, axis=0)

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        """Each image's `top_k` most probable vocabulary concepts, keeping those with probability >= `min_prob`."""
        import numpy as np

        probs = self.probabilities(samples)
        out: list[list[str]] = []
        for row in probs:
            order = np.argsort(-row, kind="stable")[: self.top_k]
            out.append([self.vocabulary[i] for i in order if row[i] >= self.min_prob])
        return out


# ----------------------------------------------------------------------------------------------------------
# factory: the extractors are registered in culturekb.registry.CONCEPT_EXTRACTORS
# ----------------------------------------------------------------------------------------------------------
vlm_factory = registry.without_argument(VLMConceptExtractor, "concept extractor", "vlm")
clip_factory = registry.without_argument(ClipConceptExtractor, "concept extractor", "clip")


def make_concept_extractor(spec: str, **kw: Any) -> ConceptExtractor:
    """A concept extractor by name: "precomputed", "text", "vlm" (needs client=), "clip" (needs vocabulary=), or
    a plug-in's (entry-point group ``culturekb.concept_extractors``), made as ``factory(argument, **kw)``."""
    extractor: ConceptExtractor = registry.CONCEPT_EXTRACTORS.create(spec, **kw)
    return extractor
