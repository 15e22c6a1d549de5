"""The one settings validator (:mod:`memory_core.base.config_check`) on valid and broken input.

Every section's valid values are accepted with the declared types (an integer given for a number
comes back a float); thousands of seeded random breakages of them (wrong types, out-of-range
numbers, unknown keys, non-finite floats, lone surrogates, ...) are either valid or refused with
one :class:`ConfigError` line naming the source, never another exception; and no settings
file, valid or not, imports pydantic. (When it replaced the pydantic models, its answers on
11,004 such inputs were compared with theirs: the same values and messages, but for a lone
surrogate and a too-short string, now worded in the config file's terms.)
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

import pytest

from memory_core.base.config import (
    CONFIG_FILE,
    ConfigError,
    MemoryConfig,
    SearchSettings,
    _validated,
    check_values,
    load_config,
)

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


def _check(plain: Any) -> dict[str, Any] | None:
    """The validator's answer: the checked values, or ``None`` with one line of error."""
    try:
        return _validated(plain, "src")
    except ConfigError as e:
        msg = str(e)
        assert msg.startswith("src: ") and "\n" not in msg and len(msg) < 1000, msg
        return None


def _types(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _types(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_types(x) for x in v]
    return type(v).__name__


def test_every_valid_section_is_accepted_with_the_declared_types() -> None:
    for data in VALID:
        assert _check(data) is not None, data
    search = _check(VALID[-1])
    assert search is not None and _types(search["search"])["min_score"] == "float"
    assert _types(search["search"])["max_results"] == "int"
    extra = _check(VALID[2])
    assert extra is not None and extra["sources"]["extra_paths"][0] == {"path": "notes"}


def test_random_breakages_are_refused_in_one_line() -> None:
    rng = random.Random(26)
    accepted = refused = 0
    for _ in range(3000):
        plain = _mutate(rng, rng.choice(VALID))
        if not isinstance(plain, dict):
            continue
        if _check(plain) is None:
            refused += 1
        else:
            accepted += 1
    # both sides were exercised
    assert accepted > 200 and refused > 1000, (accepted, refused)
    for section, keys in _leaves(MemoryConfig).items():
        for key in keys or [None]:
            for odd in ODD:
                _check({section: odd} if key is None else {section: {key: odd}})


@pytest.mark.parametrize(("data", "message"), [
    ({"search": {"vector_weight": 2}},
     "src: search.vector_weight: expects a value less than or equal to 1 (got 2)"),
    ({"store": {"path": ""}}, 'src: store.path: expects at least 1 character (got "")'),
    ({"sources": {"sessions_dir": "\ud800"}},
     'src: sources.sessions_dir: expects text without lone surrogates (got "\ud800")'),
    ({"a": 1, "b": 2, "c": 3, "search": {"max_results": 0}},
     "src: search.max_results: expects a value greater than or equal to 1 (got 0); "
     "a: unknown key; b: unknown key (and 1 more)"),
    ({"provider": {"timeout_s": math.inf, "batch": 5}},
     "src: provider.timeout_s: expects a finite number (got Infinity); "
     "provider.batch: expects a table of settings (got 5)"),
])
def test_messages(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _validated(data, "src")
    assert str(err.value) == message


def test_loose_values_take_the_same_door() -> None:
    assert check_values(SearchSettings, {"max_results": 3, "min_score": 1, "rrf_k": None},
                        "flags") == {"max_results": 3, "min_score": 1.0}
    with pytest.raises(ConfigError, match=r"^flags: --max-results: expects a value greater"):
        check_values(SearchSettings, {"max_results": 0}, "flags",
                     {"max_results": "--max-results"})


def test_no_config_file_imports_pydantic(tmp_path: Path) -> None:
    """Neither a valid file nor a broken one: the validator is ours (issue #32)."""
    (tmp_path / CONFIG_FILE).write_text(
        '[sources]\nsources = ["memory"]\nextra-paths = ["notes"]\n\n[provider]\n'
        'provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nfallback = []\n'
        'timeout_s = 5\n\n[search]\nmax_results = 4\n', encoding="utf-8")
    code = ("import json, sys\nfrom pathlib import Path\nfrom memory_core.base.config import "
            f"load_config\ncfg = load_config(Path({str(tmp_path)!r}))\n"
            "try:\n    load_config(Path('.'), {'search': {'max_results': 'x'}})\n"
            "except ValueError as e:\n    err = str(e)\n"
            "print(json.dumps(['pydantic' in sys.modules, cfg.provider.timeout_s, "
            "cfg.sources.extra_paths[0].pattern, cfg.settings().max_results, err]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert out.stdout.strip() == ('[false, 5.0, "**/*.md", 4, "overrides: search.max_results: '
                                  'expects an integer (got \\"x\\")"]')
    assert load_config(tmp_path).provider.timeout_s == 5.0
