"""The pydantic-free fast path of config validation agrees with the pydantic models.

:func:`memory_core.base.config_check.quick_check` may only accept what the models accept, with the
same dump; on anything else it must step aside (``None``) so the models give the message.
Checked on every section's valid values and on thousands of seeded random breakages of them
(wrong types, out-of-range numbers, unknown keys, non-finite floats, lone surrogates, ...).
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from memory_core.base.config import (
    CONFIG_FILE,
    MemoryConfig,
    SearchSettings,
    check_values,
    load_config,
    model_of,
)
from memory_core.base.config_check import quick_check

ROOT = Path(__file__).resolve().parents[1]

#: Valid values of every section, as a file writes them (each key of each table at least once).
VALID: list[dict[str, Any]] = [
    {"profile": "reference"},
    {"profile": "default", "search": None},
    {"sources": {"sources": ["memory"], "extra_paths": ["notes", {"path": "a.md"},
                                                      {"path": "docs", "pattern": "*.md"}],
                 "sessions_dir": "s", "follow_symlinks": True, "sessions_agent": "main"}},
    {"chunking": {"tokens": 200, "overlap": 0, "mode": "reference"}},
    {"provider": {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1",
                  "api_key_env": "K", "dimensions": 64, "fallback": ["local", "none"],
                  "batch_items": 10, "batch_bytes": 100, "concurrency": 1, "timeout_s": 5,
                  "query_timeout_s": 2.5, "max_retries": 0, "headers": {"X-A": "b"},
                  "batch": {"enabled": True, "wait": False, "concurrency": 3,
                            "poll_interval_ms": 10, "timeout_minutes": 1}}},
    {"store": {"path": ".memory/{provider}-{{x}}.sqlite", "cache_enabled": False,
               "cache_max_entries": 0, "busy_timeout_ms": 10}},
    {"watch": {"enabled": False, "debounce_ms": 0}},
    {"sessions": {"delta_bytes": 0, "delta_messages": 1}},
    {"backend": {"kind": "qmd"}},
    {"qmd": {"command": "qmd", "search_mode": "query", "include_default_memory": False,
             "paths": [{"path": "x"}], "agent_id": "a", "home": "h", "max_results": 1,
             "max_snippet_chars": 1, "max_injected_chars": 0, "timeout_ms": 1,
             "update_interval_ms": 0, "debounce_ms": 0, "on_boot": False,
             "embed_interval_ms": 0, "command_timeout_ms": 1, "update_timeout_ms": 1,
             "embed_timeout_ms": 1, "sessions": {"enabled": True, "export_dir": "e",
                                                 "retention_days": 1}}},
    {"search": {"max_results": 3, "min_score": 0, "vector_weight": 1.0, "fusion": "rrf",
                "rrf_k": 0, "keyword_query": "or", "cjk_bigrams": True, "now_ms": None,
                "half_life_days": 0.5, "cjk_vector_weight": 1, "vector_floor": 0.99,
                "calibration": "", "abstain_below": 0.5, "citations": "off", "date_hint": 0.0}},
]

ODD: list[Any] = [True, False, 0, 1, -1, 7, 0.5, 1.5, -0.5, 2.0, 2**53 + 1, 2**64, math.inf,
                  -math.inf, math.nan, "", "x", "memory", "local", "reference", "\ud800", "é",
                  "{bad}", "{", None, [], ["memory"], ["x"], ["none"], ("none",), {}, {"a": "b"},
                  {"a": 1}, {"path": "p"}, {"path": ""}, [{"path": "p", "extra": 1}], ["a", 1],
                  b"x", 3 + 0j]


def _pydantic(plain: dict[str, Any]) -> dict[str, Any] | None:
    from pydantic import ValidationError

    try:
        return model_of(MemoryConfig, frozenset(plain)).model_validate(plain).model_dump(
            exclude_unset=True)
    except ValidationError:
        return None


def _agree(plain: dict[str, Any]) -> bool:
    """The fast path accepted ``plain`` (it always agrees with pydantic when it does)."""
    fast, slow = quick_check(MemoryConfig, plain), _pydantic(plain)
    if fast is not None:
        assert slow is not None, f"accepted what pydantic refuses: {plain!r}"
        assert fast == slow and _types(fast) == _types(slow), plain
    return fast is not None


def _types(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _types(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_types(x) for x in v]
    return type(v).__name__


def test_every_valid_section_takes_the_fast_path() -> None:
    for data in VALID:
        assert _agree(data), data
    assert _agree({k: v for d in VALID for k, v in d.items() if k != "profile"})


def _mutate(rng: random.Random, value: Any) -> Any:
    """``value`` with one leaf (or table) replaced by an odd value, or a key added/removed."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        out = dict(value)
        key = rng.choice(list(out))
        roll = rng.random()
        if roll < 0.1:
            out[key + "_x"] = out[key]
        elif roll < 0.15:
            del out[key]
        else:
            out[key] = _mutate(rng, out[key])
        return out
    if isinstance(value, list) and value and rng.random() < 0.6:
        out_l = list(value)
        i = rng.randrange(len(out_l))
        out_l[i] = _mutate(rng, out_l[i])
        return out_l
    return rng.choice(ODD)


def _leaves(cls: type) -> dict[str, Any]:
    """Every field of ``cls`` with an odd value in it, to reach each declaration directly."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in fields(cls):
        if not f.metadata.get("internal"):
            tp = hints[f.name]
            out[f.name] = _leaves(tp) if is_dataclass(tp) and isinstance(tp, type) else None
    return out


def test_random_breakages_never_pass_what_pydantic_refuses() -> None:
    rng = random.Random(26)
    accepted = refused = 0
    for _ in range(3000):
        base = rng.choice(VALID)
        plain = _mutate(rng, base)
        if not isinstance(plain, dict):
            continue
        if _agree(plain):
            accepted += 1
        else:
            refused += 1
    # both sides of the property were exercised
    assert accepted > 200 and refused > 1000, (accepted, refused)
    for section, keys in _leaves(MemoryConfig).items():
        for key in keys or [None]:
            for odd in ODD:
                _agree({section: odd} if key is None else {section: {key: odd}})


def test_loose_values_take_the_same_door() -> None:
    assert check_values(SearchSettings, {"max_results": 3, "min_score": 1, "rrf_k": None},
                        "flags") == {"max_results": 3, "min_score": 1.0}
    assert quick_check(SearchSettings, {"max_results": 0}) is None  # pydantic words it


def test_a_valid_config_file_is_read_without_pydantic(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).write_text(
        '[sources]\nsources = ["memory"]\nextra-paths = ["notes"]\n\n[provider]\n'
        'provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nfallback = []\n'
        'timeout_s = 5\n\n[search]\nmax_results = 4\n', encoding="utf-8")
    code = ("import json, sys\nfrom pathlib import Path\nfrom memory_core.base.config import "
            f"load_config\ncfg = load_config(Path({str(tmp_path)!r}))\n"
            "print(json.dumps(['pydantic' in sys.modules, cfg.provider.timeout_s, "
            "cfg.sources.extra_paths[0].pattern, cfg.settings().max_results]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert out.stdout.strip() == '[false, 5.0, "**/*.md", 4]'
    assert load_config(tmp_path).provider.timeout_s == 5.0
