"""An ONNX Runtime forward pass for BERT-style sentence-transformers models (the packaged all-MiniLM-L6-v2).

Why: the numpy runtime (`minilm_numpy`) pays numpy's per-operation overhead and single-threaded element-wise
passes (layer norms, GELU, softmax) between its matrix products, and so ran at about 0.2 of the machine's float32
GEMM floor (`benchmarks/bench_embed_floor.py`). ONNX Runtime (the `onnxruntime` wheel from PyPI, 0.25 s to import,
no torch) runs the same graph with fused kernels on a chosen number of threads.

The graph is written here, in memory, from the same files the numpy runtime reads (`model.safetensors`,
`config.json`): nothing is exported by torch and nothing is downloaded. The ONNX protobuf is serialised by hand
(`_Proto`, a few message types of `onnx.proto3`), so neither `onnx` nor `protobuf` is needed. The computation is
the numpy runtime's (`minilm_numpy.NumpyBert._forward`: BERT post-layer-norm encoder, exact-erf GELU, mean pooling
over the attention mask, L2 normalisation); `tests/models/test_minilm_onnx.py` checks it against
sentence-transformers within 1e-4 cosine.

Threads: `culturekb.models.threads.compute_threads()` intra-op threads that do not spin while waiting (ONNX
Runtime's spinning threads burn a core that another process may need; see docs/scaling.md, "Thread policy").
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.errors import ConfigError, CultureKBError, require
from culturekb.models.minilm_numpy import BertWeights, NumpyBert, _no_weights
from culturekb.models.threads import compute_threads

__all__ = ["OnnxBert", "bert_graph", "load_onnx_bert", "loaded_onnx_models", "onnx_available"]

_OPSET = 17  # LayerNormalization is a standard op from 17
_IR_VERSION = 8
_FLOAT, _INT32, _INT64 = 1, 6, 7  # TensorProto.DataType
_MS = "com.microsoft"  # ONNX Runtime's contrib operators (fused BERT kernels)
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def onnx_available() -> bool:
    """Whether `onnxruntime` can be imported (without importing it)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None


# -- protobuf wire format (the few ONNX messages the graph needs) ---------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as two's complement, 10 bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return _key(field, 2) + _varint(len(data)) + data


def _float(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value)


def _attr(name: str, value: float | int | list[int]) -> bytes:
    body = _bytes(1, name)
    if isinstance(value, list):
        body += b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    elif isinstance(value, float):
        body += _float(2, value) + _int(20, _ATTR_FLOAT)
    else:
        body += _int(3, value) + _int(20, _ATTR_INT)
    return body


def _tensor(name: str, array: np.ndarray) -> bytes:
    dtype = {np.dtype(np.float32): _FLOAT, np.dtype(np.int64): _INT64}[array.dtype]
    dims = b"".join(_int(1, d) for d in array.shape)
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()  # ONNX raw data: little-endian
    return dims + _int(2, dtype) + _bytes(8, name) + _bytes(9, data)


def _value_info(name: str, elem_type: int, dims: list[str | int]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


class _Graph:
    """Nodes and initialisers of one ONNX graph, serialised as a ModelProto by `model()`."""

    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self._n = 0

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(_tensor(name, array))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attrs: float | int | list[int]) -> str:
        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        body = b"".join(_bytes(1, i) for i in inputs) + _bytes(2, out) + _bytes(3, out) + _bytes(4, op_type)
        if domain:
            body += _bytes(7, domain)
        body += b"".join(_bytes(5, _attr(k, v)) for k, v in attrs.items())
        self.nodes.append(body)
        return out

    def model(self, inputs: list[bytes], outputs: list[bytes]) -> bytes:
        graph = b"".join(_bytes(1, n) for n in self.nodes) + _bytes(2, "bert")
        graph += b"".join(_bytes(5, t) for t in self.inits)
        graph += b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs)
        opsets = _bytes(8, _bytes(1, "") + _int(2, _OPSET)) + _bytes(8, _bytes(1, _MS) + _int(2, 1))
        return _int(1, _IR_VERSION) + _bytes(2, "culturekb") + _bytes(7, graph) + opsets


def bert_graph(w: BertWeights) -> bytes:
    """The serialised ONNX model of the BERT encoder in `w`, with ONNX Runtime's fused CPU kernels
    (`com.microsoft` Attention, BiasGelu, SkipLayerNormalization: what its transformer optimiser makes of an
    exported BERT).

    Inputs: `input_ids` int64 (batch, length), `positions` int64 (length,) = 0..length-1, `mask` int32
    (batch, length): 1 for tokens, 0 for padding. Output: `hidden` float32 (batch, length, hidden), the last
    hidden state (the caller mean-pools it over the mask).
    """
    g = _Graph()
    hidden = int(w.word.shape[1])
    eps = float(w.eps)
    word = g.const("word", w.word)
    position = g.const("position", w.position + w.token_type[0][None, :])  # token type 0 everywhere
    x = g.op("Add", g.op("Gather", word, "input_ids", axis=0), g.op("Gather", position, "positions", axis=0))
    x = g.op("LayerNormalization", x, g.const("emb_ln_w", w.emb_ln[0]), g.const("emb_ln_b", w.emb_ln[1]),
             axis=-1, epsilon=eps)
    for i, layer in enumerate(w.layers):
        attn = g.op("Attention", x, g.const(f"l{i}_qkv_w", layer["qkv_w"]), g.const(f"l{i}_qkv_b", layer["qkv_b"]),
                    "mask", domain=_MS, num_heads=w.heads)
        attn = g.op("MatMul", attn, g.const(f"l{i}_ao_w", layer["ao_w"]))
        x = g.op("SkipLayerNormalization", attn, x, g.const(f"l{i}_ln1_w", layer["ln1_w"]),
                 g.const(f"l{i}_ln1_b", layer["ln1_b"]), g.const(f"l{i}_ao_b", layer["ao_b"]), domain=_MS,
                 epsilon=eps)
        inner = g.op("BiasGelu", g.op("MatMul", x, g.const(f"l{i}_in_w", layer["in_w"])),
                     g.const(f"l{i}_in_b", layer["in_b"]), domain=_MS)
        out = g.op("MatMul", inner, g.const(f"l{i}_out_w", layer["out_w"]))
        x = g.op("SkipLayerNormalization", out, x, g.const(f"l{i}_ln2_w", layer["ln2_w"]),
                 g.const(f"l{i}_ln2_b", layer["ln2_b"]), g.const(f"l{i}_out_b", layer["out_b"]), domain=_MS,
                 epsilon=eps)
    g.nodes.append(_bytes(1, x) + _bytes(2, "hidden") + _bytes(3, "output") + _bytes(4, "Identity"))
    inputs = [_value_info("input_ids", _INT64, ["batch", "length"]), _value_info("positions", _INT64, ["length"]),
              _value_info("mask", _INT32, ["batch", "length"])]
    return g.model(inputs, [_value_info("hidden", _FLOAT, ["batch", "length", hidden])])


# -- the graph file, written once per model into the cache folder ----------------------------------------------

GRAPH_VERSION = "1"
"""Part of a saved graph's name: bump it when `bert_graph` changes what it writes."""


def graph_file(model_dir: Path, cache_dir: Path | None = None) -> Path | None:
    """Where the graph of `model_dir` is saved: ``<cache_dir>/onnx/<folder>-<key>.onnx``, the key a hash of the
    weights file's size and time, the config and `GRAPH_VERSION` (None when no cache folder can be named)."""
    import hashlib

    try:
        if cache_dir is None:
            from culturekb.config import load_settings

            cache_dir = load_settings().cache_dir
        weights = (model_dir / "model.safetensors").stat()
        config = (model_dir / "config.json").read_bytes()
    except (OSError, ValueError, CultureKBError):
        return None
    key = hashlib.sha256(f"{GRAPH_VERSION}|{weights.st_size}|{weights.st_mtime_ns}|".encode() + config).hexdigest()
    return Path(cache_dir) / "onnx" / f"{model_dir.name}-{key[:16]}.onnx"


def _save_graph(model: bytes, path: Path) -> None:
    """Write the graph atomically; a cache folder that cannot be written only costs the next process a rebuild."""
    import os
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(model)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


# -- the runtime ----------------------------------------------------------------------------------------------

_LOADED: dict[tuple[Path, int], OnnxBert] = {}
_LOAD_LOCK = threading.Lock()


def load_onnx_bert(model_dir: Path, threads: int | None = None) -> OnnxBert:
    """The model in `model_dir` on ONNX Runtime, loaded once per (folder, thread count) and process."""
    key = (Path(model_dir).resolve(), int(threads or compute_threads()))
    with _LOAD_LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = OnnxBert(key[0], key[1])
        return model


def loaded_onnx_models() -> set[Path]:
    """The model folders this process has loaded on ONNX Runtime."""
    with _LOAD_LOCK:
        return {path for path, _ in _LOADED}


class OnnxBert(NumpyBert):
    """Sentence embeddings from a BERT sentence-transformers folder on ONNX Runtime; thread-safe `encode`.

    Tokenisation, length-sorted batching and pooling are the numpy runtime's; only the encoder differs. Batches
    hold up to `tokens_per_batch` tokens (padding included) whatever `batch_size` says: measured on 2 cores,
    512-token batches ran 1.2-4x faster than 2,048-8,192 (their activations leave the cache) and than 64 texts of
    mixed lengths.
    """

    tokens_per_batch = 512

    def __init__(self, model_dir: Path, threads: int, cache_dir: Path | None = None) -> None:
        ort: Any = require("onnxruntime", "retrieval", "The ONNX MiniLM runtime")
        saved = graph_file(model_dir, cache_dir)
        super().__init__(model_dir, load_weights=saved is None or not saved.is_file())
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, int(threads))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.threads = options.intra_op_num_threads
        self.graph_path = saved
        model: bytes | str
        if saved is not None and saved.is_file():
            model = str(saved)
        else:
            model = bert_graph(self.weights)
            if saved is not None:
                _save_graph(model, saved)
        try:
            self._session: Any = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ConfigError(f"ONNX Runtime cannot load the graph of {model_dir} ({saved or 'in memory'}): {exc}; "
                              "delete that file to have it written again, or use the numpy runtime "
                              "(spec 'minilm:numpy')") from exc
        self.weights = _no_weights(self.config)  # the session holds its own copy

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        length = ids.shape[1]
        (hidden,) = self._session.run(["hidden"], {"input_ids": ids, "positions": np.arange(length, dtype=np.int64),
                                                   "mask": mask.astype(np.int32)})
        counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled = np.einsum("nld,nl->nd", hidden, mask) / counts
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)

    def _blas_context(self) -> Any:
        from contextlib import nullcontext

        return nullcontext()


