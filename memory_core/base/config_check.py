"""The one validator of settings: plain values checked against the config dataclasses' fields.

A ``memory-workbench.toml``, an override dict, ``openclaw.json``'s mapped settings, CLI flags and
tool arguments all reach the configuration through :func:`validate`, which reads each field's
declaration (its type, the :func:`~memory_core.base.config.setting` range, ``before``/``after``
functions, whether it is required) and returns only the keys given, with their checked values.
Types are strict: no ``"5000"`` for an integer, no letter-by-letter reading of a string given
for a list, no ``true`` for a number; an integer is a number. Each problem is recorded with where
it is and what the key expects, in the words of a config file (:func:`describe` puts them on one
line). It replaced pydantic models generated from the same fields, whose import and generation
cost ~125 ms of CPU in every process that read a settings file (issue #32).
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Literal, NamedTuple, get_args, get_origin

_HIDDEN: Any = object()  # a problem whose message does not repeat the value given
_BAD: Any = object()  # a value with a problem (recorded)
_BOUNDS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "ge": (lambda v, b: v >= b, "greater than or equal to"),
    "gt": (lambda v, b: v > b, "greater than"),
    "le": (lambda v, b: v <= b, "less than or equal to"),
    "lt": (lambda v, b: v < b, "less than"),
}
_HINTS: dict[type, dict[str, Any]] = {}
_FIELDS: dict[type, dict[str, _Field]] = {}


class ConfigError(ValueError):
    """A configuration value that cannot work: one line naming the key and what it expects.

    A ``ValueError``, so the CLI reports it on one line with exit code 2 like any bad input.
    """


class Problem(NamedTuple):
    """One bad value: its key path, what the key expects, and the value (or ``_HIDDEN``)."""

    loc: tuple[int | str, ...]
    what: str
    got: Any = _HIDDEN


@dataclass(frozen=True)
class _Field:
    name: str
    tp: Any  # the declared type, or ``validate_as``
    meta: Mapping[str, Any]
    required: bool


def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, evaluated once per class (the CLI's flags read the
    declarations of several fields; each evaluation is ~1 ms). Read-only: shared."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _fields(cls: type) -> dict[str, _Field]:
    """The checked fields of ``cls`` (not ``internal`` ones) by name, read once per class."""
    out = _FIELDS.get(cls)
    if out is None:
        hints = type_hints(cls)
        out = _FIELDS[cls] = {
            f.name: _Field(f.name, f.metadata.get("validate_as", hints[f.name]), f.metadata,
                           f.default is MISSING and f.default_factory is MISSING)
            for f in fields(cls) if not f.metadata.get("internal")}
    return out


def validate(cls: type, data: Mapping[str, Any], source: str,
             labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``data`` (plain keys of ``cls``'s fields) checked: the keys given, with their checked
    values; a :class:`ConfigError` naming every problem on one line (:func:`describe`)."""
    problems: list[Problem] = []
    checked = check_table(cls, data, problems)
    if problems:
        raise ConfigError(describe(problems, source, labels))
    return typing.cast(dict[str, Any], checked)


def check_table(cls: type, value: Any, problems: list[Problem],
                loc: tuple[int | str, ...] = ()) -> Any:
    """``value`` (a dict of ``cls``'s keys) checked: the keys given with their checked values;
    each problem appended to ``problems`` (the result is then not to be used)."""
    if not isinstance(value, dict):
        problems.append(Problem(loc, "expects a table of settings", value))
        return _BAD
    known = _fields(cls)
    out = {key: _check_field(known[key], v, problems, (*loc, key))
           for key, v in value.items() if key in known}
    # what the given values expect first, then the keys that are not settings
    problems.extend(Problem((*loc, key), "unknown key") for key in value if key not in known)
    problems.extend(Problem((*loc, f.name), "is required") for f in known.values()
                    if f.required and f.name not in value)
    return out


def _check_field(f: _Field, value: Any, problems: list[Problem],
                 loc: tuple[int | str, ...]) -> Any:
    """One field: its ``before`` function, its type and range, then its ``after`` function (a
    function refuses a value with ``ValueError``, whose text is the message)."""
    try:
        if "before" in f.meta:
            value = f.meta["before"](value)
        value = _check_value(f.tp, f.meta, value, problems, loc)
        if value is not _BAD and "after" in f.meta:
            value = f.meta["after"](value)
    except ValueError as e:
        problems.append(Problem(loc, str(e)))
        return _BAD
    return value


def _check_value(tp: Any, meta: Mapping[str, Any], value: Any, problems: list[Problem],
                 loc: tuple[int | str, ...]) -> Any:
    """``value`` checked against the type ``tp`` and the range in ``meta``."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (typing.Union, types.UnionType):  # only ``X | None`` is declared
        if value is None:
            return None
        tp = next(a for a in args if a is not type(None))
        origin, args = get_origin(tp), get_args(tp)
    if is_dataclass(tp) and isinstance(tp, type):
        return check_table(tp, value, problems, loc)
    if origin is list:
        if not isinstance(value, list):
            return _problem(problems, loc, "expects a list", value)
        return [_check_value(args[0], {}, v, problems, (*loc, i)) for i, v in enumerate(value)]
    if origin is dict:  # dict[str, str]: HTTP headers
        if not isinstance(value, dict):
            return _problem(problems, loc, "expects a table of settings", value)
        return {k: _check_value(str, {}, v, problems, (*loc, str(k))) for k, v in value.items()}
    if origin is Literal:
        if type(value) is str and value in args:
            return value
        return _problem(problems, loc, "expects " + _either(args), value)
    what = _TYPE_CHECKS[tp](value)
    if what:
        return _problem(problems, loc, what, value)
    for key, (holds, words) in _BOUNDS.items():
        if key in meta and not holds(value, meta[key]):
            return _problem(problems, loc, f"expects a value {words} {_number(meta[key])}",
                            value)
    least = meta.get("min_length", 0)
    if tp is str and len(value) < least:
        return _problem(problems, loc, f"expects at least {least} character"
                                       + ("s" if least > 1 else ""), value)
    return float(value) if tp is float else value


def _type_error_of_str(v: Any) -> str:
    if type(v) is not str:
        return "expects a string"
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file or index can hold it
        return "expects text without lone surrogates"
    return ""


def _type_error_of_float(v: Any) -> str:
    if type(v) is int:
        return "" if abs(v) < 2 ** 1023 else "expects a finite number"
    if type(v) is not float:
        return "expects a number"
    return "" if math.isfinite(v) else "expects a finite number"


#: Each scalar type: what the key expects when a value is not of it ("": it is).
_TYPE_CHECKS: dict[Any, Callable[[Any], str]] = {
    bool: lambda v: "" if type(v) is bool else "expects true or false",
    int: lambda v: "" if type(v) is int else "expects an integer",
    float: _type_error_of_float,
    str: _type_error_of_str,
}


def _problem(problems: list[Problem], loc: tuple[int | str, ...], what: str, got: Any) -> Any:
    problems.append(Problem(loc, what, got))
    return _BAD


def _either(choices: tuple[Any, ...]) -> str:
    """``'a', 'b' or 'c'``."""
    shown = [repr(c) for c in choices]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _number(bound: float) -> str:
    """A bound as a file would write it: ``1`` for 1.0."""
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def shown(value: Any) -> str:
    """A value as the user wrote it (TOML and JSON agree on strings, numbers, lists), short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def describe(problems: list[Problem], source: str,
             labels: Mapping[str, str] | None = None) -> str:
    """All problems of one source on one line: ``<source>: key: what it expects (got x)``;
    ``labels`` names a key as its door spells it (``--max-results``)."""
    parts = []
    for p in problems:
        key = _key_path(p.loc)
        line = f"{(labels or {}).get(key, key)}: {p.what}"
        if p.got is not _HIDDEN:
            line += f" (got {shown(p.got)})"
        parts.append(line)
    more = f" (and {len(parts) - 3} more)" if len(parts) > 3 else ""
    return f"{source}: " + "; ".join(parts[:3]) + more
