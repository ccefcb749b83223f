"""A numpy forward pass for BERT-style sentence-transformers models (the packaged all-MiniLM-L6-v2 by default).

Why: sentence-transformers imports transformers and torch, which costs ~20 s of CPU on a small machine before
the first vector; a lookup that embeds one concept must not pay that. This runtime reads the same files
(`model.safetensors` through the safetensors numpy API, `tokenizer.json` through the `tokenizers` library, neither
of which imports torch) and computes what sentence-transformers computes for a `Transformer -> Pooling(mean) ->
Normalize` model: BERT encoder (post-layer-norm, exact-erf GELU), mean pooling over the attention mask, L2
normalisation. `tests/models/test_minilm_numpy.py` checks it against sentence-transformers within 1e-4 cosine on
real multilingual concept strings.

The loaded weights are shared per process (`load_bert`), so every embedder over the same folder uses one copy.

BLAS threads: the forward pass runs with one BLAS thread (`threadpoolctl`, when installed). Its matrices are small
(a batch of short concepts is a few hundred tokens), and OpenBLAS's worker threads spin-wait: measured on this
2-core machine with the other core busy, 16 concepts took 525 ms with OpenBLAS's 2 threads and 58 ms with one (ST's
torch runtime: 73 ms). Parallelism comes from callers instead (the API's encoder threads, one per core).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError, require

try:  # optional: without it, BLAS keeps its own thread count
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - threadpoolctl comes with the retrieval extra
    ThreadpoolController = None

__all__ = ["BertWeights", "NumpyBert", "load_bert", "loaded_models", "supports_numpy_runtime"]

_EXTRA = "retrieval"


@dataclass(frozen=True)
class BertWeights:
    """The tensors and sizes of one BERT encoder, as float32 numpy arrays (linear weights transposed to (in, out))."""

    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    emb_ln: tuple[np.ndarray, np.ndarray]
    layers: tuple[dict[str, np.ndarray], ...]
    heads: int
    eps: float


def supports_numpy_runtime(model_dir: Path) -> str | None:
    """None when `model_dir` is a model this runtime computes exactly, else why not (a sentence)."""
    try:
        config = json.loads((model_dir / "config.json").read_text("utf-8"))
        modules = json.loads((model_dir / "modules.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read config.json/modules.json in {model_dir}: {exc}"
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        return f"{model_dir}: model_type {config.get('model_type')!r} / {config.get('hidden_act')!r} is not BERT+gelu"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return f"{model_dir}: position embeddings {config.get('position_embedding_type')!r} are not absolute"
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling"]):
        return f"{model_dir}: modules {kinds} are not Transformer -> Pooling [-> Normalize]"
    pooling = modules[1].get("path", "1_Pooling")
    try:
        pool = json.loads((model_dir / pooling / "config.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read the pooling config in {model_dir / pooling}: {exc}"
    others = [k for k, v in pool.items() if k.startswith("pooling_mode_") and v and k != "pooling_mode_mean_tokens"]
    if not pool.get("pooling_mode_mean_tokens") or others:
        return f"{model_dir}: pooling {pool} is not mean pooling alone"
    if not (model_dir / "model.safetensors").is_file() or not (model_dir / "tokenizer.json").is_file():
        return f"{model_dir}: model.safetensors or tokenizer.json is missing"
    return None


_LOADED: dict[Path, NumpyBert] = {}
_LOAD_LOCK = threading.Lock()


def load_bert(model_dir: Path) -> NumpyBert:
    """The model in `model_dir`, loaded once per process (later calls return the same object)."""
    key = Path(model_dir).resolve()
    with _LOAD_LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = NumpyBert(key)
        return model


def loaded_models() -> set[Path]:
    """The model folders this process has loaded."""
    with _LOAD_LOCK:
        return set(_LOADED)


class NumpyBert:
    """Sentence embeddings from a BERT sentence-transformers folder, in numpy; thread-safe `encode`."""

    def __init__(self, model_dir: Path, load_weights: bool = True) -> None:
        why = supports_numpy_runtime(model_dir)
        if why is not None:
            raise ConfigError(f"the numpy runtime cannot run this model: {why}; use the sentence-transformers "
                              "runtime (spec 'st:PATH', or 'minilm:st' for the packaged MiniLM)")
        tokenizers = require("tokenizers", _EXTRA, "The numpy MiniLM runtime")
        st_numpy = require("safetensors.numpy", _EXTRA, "The numpy MiniLM runtime")
        config = json.loads((model_dir / "config.json").read_text("utf-8"))
        try:
            st_config = json.loads((model_dir / "sentence_bert_config.json").read_text("utf-8"))
        except (OSError, ValueError):
            st_config = {}
        self.model_dir = model_dir
        self.dim = int(config["hidden_size"])
        self.max_length = int(min(st_config.get("max_seq_length", 512), config.get("max_position_embeddings", 512)))
        self._tokenizer: Any = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))  # type: ignore[attr-defined]
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)
        self.config = config
        self.weights = _no_weights(config)
        if load_weights:  # a subclass running a saved graph needs none
            raw: dict[str, np.ndarray] = st_numpy.load_file(str(model_dir / "model.safetensors"))  # type: ignore[attr-defined]
            self.weights = _weights(raw, config)
        self._lock = threading.Lock()

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """(len(texts), dim) float32 unit-norm mean-pooled embeddings; batches sorted by length, as s-t does."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # the Rust tokenizer's settings are shared state
            encodings = self._tokenizer.encode_batch(texts)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        order = np.argsort([-len(i) for i in ids], kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        step = max(1, int(batch_size))
        with self._blas_context():
            self._run(ids, order, step, out)
        return out

    def _blas_context(self) -> Any:
        """The BLAS thread setting of a forward pass: one thread (see the module docstring)."""
        return _one_blas_thread()

    tokens_per_batch = 0
    """When > 0, batches hold up to this many tokens (padding included) instead of `batch_size` texts: short texts
    go in large batches, long ones in small ones, and a batch never mixes a long text with many short ones."""

    def _run(self, ids: list[np.ndarray], order: np.ndarray, step: int, out: np.ndarray) -> None:
        start = 0
        while start < len(order):
            width = len(ids[order[start]])  # the longest: `order` sorts by length, longest first
            count = max(1, self.tokens_per_batch // max(width, 1)) if self.tokens_per_batch > 0 else step
            chunk = order[start : start + count]
            start += len(chunk)
            batch = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                batch[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            out[chunk] = self._forward(batch, mask)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.weights
        n, length = ids.shape
        heads, hidden = w.heads, self.dim
        size = hidden // heads
        x = (w.word[ids] + w.position[:length][None, :, :] + w.token_type[0][None, None, :]).reshape(n * length, hidden)
        x = _layer_norm(x, *w.emb_ln, w.eps)
        bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(size))
        for layer in w.layers:  # 2-D matmuls: numpy's stacked matmul is far slower on small stacks
            qkv = (x @ layer["qkv_w"] + layer["qkv_b"]).reshape(n, length, 3, heads, size)
            q, k, v = (np.ascontiguousarray(qkv[:, :, j].transpose(0, 2, 1, 3)) for j in range(3))
            scores = np.einsum("nhld,nhmd->nhlm", q, k) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = np.einsum("nhlm,nhmd->nlhd", scores, v).reshape(n * length, hidden)
            x = _layer_norm(context @ layer["ao_w"] + layer["ao_b"] + x, layer["ln1_w"], layer["ln1_b"], w.eps)
            inner = _gelu(x @ layer["in_w"] + layer["in_b"])
            x = _layer_norm(inner @ layer["out_w"] + layer["out_b"] + x, layer["ln2_w"], layer["ln2_b"], w.eps)
        x = x.reshape(n, length, hidden)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled = np.einsum("nld,nl->nd", x, mask) / counts
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


_CONTROLLER: Any = None
_CONTROLLER_LOCK = threading.Lock()


def _one_blas_thread() -> Any:
    """A context in which BLAS runs one thread (a no-op context without threadpoolctl)."""
    global _CONTROLLER
    if ThreadpoolController is None:
        from contextlib import nullcontext

        return nullcontext()
    with _CONTROLLER_LOCK:
        if _CONTROLLER is None:
            _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def _no_weights(config: dict[str, Any]) -> BertWeights:
    """Sizes without tensors (a runtime that keeps the weights elsewhere)."""
    empty = np.zeros((0, 0), dtype=np.float32)
    return BertWeights(word=empty, position=empty, token_type=empty, emb_ln=(empty, empty), layers=(),
                       heads=int(config["num_attention_heads"]), eps=float(config.get("layer_norm_eps", 1e-12)))


def _weights(raw: dict[str, np.ndarray], config: dict[str, Any]) -> BertWeights:
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in raw else ""

    def get(name: str) -> np.ndarray:
        key = prefix + name
        if key not in raw:
            raise ConfigError(f"tensor {key!r} missing from model.safetensors; the folder is not a BERT model")
        return np.ascontiguousarray(raw[key], dtype=np.float32)

    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        att = p + "attention."
        qkv_w = np.concatenate([get(f"{att}self.{m}.weight").T for m in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([get(f"{att}self.{m}.bias") for m in ("query", "key", "value")])
        layers.append({
            "qkv_w": np.ascontiguousarray(qkv_w), "qkv_b": qkv_b,
            "ao_w": np.ascontiguousarray(get(f"{att}output.dense.weight").T), "ao_b": get(f"{att}output.dense.bias"),
            "ln1_w": get(f"{att}output.LayerNorm.weight"), "ln1_b": get(f"{att}output.LayerNorm.bias"),
            "in_w": np.ascontiguousarray(get(f"{p}intermediate.dense.weight").T),
            "in_b": get(f"{p}intermediate.dense.bias"),
            "out_w": np.ascontiguousarray(get(f"{p}output.dense.weight").T), "out_b": get(f"{p}output.dense.bias"),
            "ln2_w": get(f"{p}output.LayerNorm.weight"), "ln2_b": get(f"{p}output.LayerNorm.bias"),
        })
    return BertWeights(
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight"),
        emb_ln=(get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias")),
        layers=tuple(layers),
        heads=int(config["num_attention_heads"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
    )


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 noise)."""
    z = np.abs(x) * np.float32(1.0 / np.sqrt(2.0))
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    erf_abs = np.float32(1.0) - poly * np.exp(-z * z)
    erf = np.where(x >= 0, erf_abs, -erf_abs)
    return np.float32(0.5) * x * (np.float32(1.0) + erf)
