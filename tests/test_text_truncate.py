"""``truncate_utf16`` (snippets): the longest prefix of a text within ``max_units`` UTF-16 units,
never half a surrogate pair, whichever characters the text holds past the cut."""

from __future__ import annotations

import random

from memory_core.base.text import truncate_utf16


def _oracle(text: str, max_units: int) -> str:
    out = ""
    for ch in text:
        if len((out + ch).encode("utf-16-le")) // 2 > max_units:
            break
        out += ch
    return out


def test_truncate_utf16_is_the_longest_prefix_within_the_units() -> None:
    rng = random.Random(7)
    alphabet = "ab é中😀\U00010348"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        for max_units in range(0, 17):
            assert truncate_utf16(text, max_units) == _oracle(text, max_units), (text, max_units)
    # an astral character only past the cut does not change the plain slice
    assert truncate_utf16("abc" + "😀" * 3, 3) == "abc"
    assert truncate_utf16("ab😀", 3) == "ab"
    assert truncate_utf16("ab😀", 4) == "ab😀"
