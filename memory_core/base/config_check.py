"""The fast path of config validation: the common, valid file checked without pydantic.

Importing pydantic and generating the validation models costs ~125 ms of CPU in a process
that reads a ``memory-workbench.toml``, more than a whole no-op ``index`` may (issue #26).
:func:`quick_check` applies the same declarations (each field's type, its :func:`setting`
range, ``before``/``after`` functions, required keys, no unknown key) to the plain values a
TOML file or an override dict holds, and returns exactly what the pydantic model's
``model_dump(exclude_unset=True)`` would. It only ever *accepts*: on anything it does not
vouch for (a problem, or a type it does not handle) it returns ``None`` and the caller runs the
pydantic models, which produce the error message as before. So the messages cannot drift; a
value this path accepts that pydantic would refuse is a bug (tests/test_config_check.py
compares the two on valid and broken inputs).
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Literal, get_args, get_origin

#: A checker: the validated value, or :data:`_NO` when the pydantic path must decide.
Check = Callable[[Any], Any]
_NO: Any = object()
_INT_RANGE = 1 << 63  # pydantic-core's strict int: leave huge ones to it
_EXACT_FLOAT = 1 << 53  # an int read as a float loses nothing below this
_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "ge": lambda v, b: v >= b, "gt": lambda v, b: v > b,
    "le": lambda v, b: v <= b, "lt": lambda v, b: v < b,
}
_CHECKS: dict[type, Check] = {}
_HINTS: dict[type, dict[str, Any]] = {}
_SURROGATE = re.compile("[\ud800-\udfff]")


def quick_check(cls: type, data: Mapping[str, Any]) -> dict[str, Any] | None:
    """``data`` (plain keys, as :func:`memory_core.base.config._plain` gives them) validated against
    ``cls``'s declarations, as pydantic's dump of only the keys given; ``None`` when it may be
    invalid (the caller then asks pydantic, for the exact error)."""
    out = _checker(cls)(data)
    return None if out is _NO else out


def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, evaluated once per class (the CLI's flags read the
    declarations of several fields; each evaluation is ~1 ms). Read-only: shared."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _checker(cls: type) -> Check:
    """The checker of one config dataclass, built once from its fields."""
    if cls in _CHECKS:
        return _CHECKS[cls]
    hints = type_hints(cls)
    spec: dict[str, Check] = {}
    required: list[str] = []
    for f in fields(cls):
        meta = f.metadata
        if meta.get("internal"):
            continue
        check = _value_check(meta.get("validate_as", hints[f.name]), meta)
        for mode in ("before", "after"):
            if mode in meta:
                check = _with_function(check, meta[mode], mode)
        spec[f.name] = check
        if f.default is MISSING and f.default_factory is MISSING:
            required.append(f.name)

    def check_table(value: Any) -> Any:
        if type(value) is not dict or any(k not in value for k in required):
            return _NO
        out: dict[str, Any] = {}
        for key, v in value.items():
            check = spec.get(key)
            if check is None:
                return _NO  # unknown key
            got = check(v)
            if got is _NO:
                return _NO
            out[key] = got
        return out

    _CHECKS[cls] = check_table
    return check_table


def _with_function(check: Check, fn: Callable[[Any], Any], mode: str) -> Check:
    """``check`` with a declared ``before``/``after`` function around it; a function that
    refuses the value (``ValueError``) leaves the message to pydantic."""
    def run(value: Any) -> Any:
        try:
            return fn(value)
        except ValueError:
            return _NO

    if mode == "before":
        def before(value: Any) -> Any:
            v = run(value)
            return _NO if v is _NO else check(v)
        return before

    def after(value: Any) -> Any:
        v = check(value)
        return _NO if v is _NO else run(v)
    return after


def _value_check(tp: Any, meta: Mapping[str, Any]) -> Check:
    """The check of one field's type (strict, as the pydantic models: no coercion but an int
    for a float) with its range; :data:`_NO` for any type this path does not handle."""
    origin, args = get_origin(tp), get_args(tp)
    ranged = [k for k in (*_BOUNDS, "min_length") if k in meta]
    if origin in (typing.Union, types.UnionType):
        if len(args) != 2 or type(None) not in args:
            return _refuse
        inner = _value_check(next(a for a in args if a is not type(None)), meta)
        return lambda v: None if v is None else inner(v)
    wanted = {"min_length"} if tp is str else set(_BOUNDS) if tp in (int, float) else set()
    if not set(ranged) <= wanted:
        return _refuse  # a range this path does not apply: pydantic's
    if is_dataclass(tp) and isinstance(tp, type):
        # a section's checker is built when a value of it is first checked: a file names a few
        # of the 13 sections, and each class's hints cost an eval of every annotation (~0.3 ms)
        section = tp
        return lambda v: _checker(section)(v)
    if origin is list:
        item = _value_check(args[0], {})

        def check_list(value: Any) -> Any:
            if type(value) is not list:
                return _NO
            out = [item(v) for v in value]
            return _NO if any(v is _NO for v in out) else out
        return check_list
    if origin is dict:
        if args != (str, str):
            return _refuse
        return lambda v: (dict(v) if type(v) is dict and all(
            type(k) is str and _text_ok(k) and type(x) is str and _text_ok(x)
            for k, x in v.items()) else _NO)
    if origin is Literal:
        choices = frozenset(args)
        if not all(type(c) is str for c in choices):
            return _refuse
        return lambda v: v if type(v) is str and v in choices else _NO
    bounds = [(_BOUNDS[k], meta[k]) for k in _BOUNDS if k in meta]
    if tp is bool:
        return lambda v: v if type(v) is bool else _NO
    if tp is int:
        def check_int(v: Any) -> Any:
            ok = type(v) is int and -_INT_RANGE <= v < _INT_RANGE
            return v if ok and all(b(v, limit) for b, limit in bounds) else _NO
        return check_int
    if tp is float:
        def check_float(v: Any) -> Any:
            if type(v) is int and -_EXACT_FLOAT < v < _EXACT_FLOAT:
                v = float(v)
            ok = type(v) is float and math.isfinite(v)
            return v if ok and all(b(v, limit) for b, limit in bounds) else _NO
        return check_float
    if tp is str:
        least = meta.get("min_length", 0)
        return lambda v: v if type(v) is str and len(v) >= least and _text_ok(v) else _NO
    return _refuse


def _refuse(value: Any) -> Any:
    return _NO


def _text_ok(s: str) -> bool:
    """Text UTF-8 can hold: a lone surrogate (the only code points it cannot) is pydantic's to
    report."""
    return s.isascii() or _SURROGATE.search(s) is None
