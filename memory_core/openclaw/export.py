"""Writing tuned settings back into ``openclaw.json``, on request only.

The file is the user's, written by hand with comments, so the change must be the smallest one:
each setting that differs is replaced *in place* (only the characters of its value change);
a setting the file does not have yet is inserted into the innermost object that exists on its
path (``agents.defaults.memorySearch`` or ``memory.search``, whichever the file uses), in that
object's indentation. Comments and everything else stay byte for byte. When a value cannot be
placed that way (a value on its path is not an object, or the block is an agent's entry in
``agents.list``), :func:`plan_export` says so and gives the values to add by hand
(:attr:`ExportPlan.manual_patch`);
:func:`apply_export` then refuses to rewrite the file. A backup of the previous bytes is kept
next to it (``openclaw.json.bak-<UTC time>``, never overwriting an earlier one) and the write
is atomic. Line endings (CRLF stays CRLF) and a BOM are kept; a symlinked file is rewritten
through its link (the link stays); a read-only file is refused, not rewritten.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.config import SearchSettings, openclaw_keys
from ..base.fileio import ContentChanged, rewrite_shared
from .config import OpenClawConfigError, dig, parse_openclaw_text, read_config_text

#: Our search setting → its path under a memory-search block, as each setting declares it.
EXPORTED: dict[str, tuple[str, ...]] = openclaw_keys(SearchSettings)


@dataclass
class ExportPlan:
    """What an export would write: the new text, its diff, and whether it is safe."""

    path: Path
    old_text: str
    new_text: str
    changes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: The values that could not be placed, as the nested object to merge by hand.
    manual: dict[str, Any] = field(default_factory=dict)
    #: Settings left out because they mean something else in OpenClaw's engine, and why.
    untranslated: list[str] = field(default_factory=list)

    @property
    def manual_patch(self) -> str:
        """What to add by hand when the plan is refused (JSON, which JSON5 accepts)."""
        return json.dumps(self.manual, indent=2) + "\n" if self.manual else ""

    @property
    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.old_text.splitlines(keepends=True), self.new_text.splitlines(keepends=True),
            f"a/{self.path.name}", f"b/{self.path.name}"))

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "changes": self.changes, "refused": self.refused,
                "untranslated": self.untranslated, "diff": self.diff,
                "manualPatch": self.manual_patch, "ok": self.ok}


# ----------------------------------------------------------------- a minimal JSON5 scanner
#
# Enough of JSON5's grammar to find where each key's value starts and ends: strings (both
# quotes, escapes), comments (// and /* */), nested objects and arrays. Positions are offsets
# in the original text, so an edit replaces exactly the value's characters.

_KEY_RE = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([A-Za-z_$][\w$]*))\s*:""")


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise OpenClawConfigError("unterminated comment")
            i = j + 2
        else:
            break
    return i


def _value_end(text: str, i: int) -> int:
    """Offset just after the JSON5 value starting at ``i``."""
    c = text[i]
    if c in "\"'":
        j = i + 1
        while j < len(text):
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == c:
                return j + 1
            j += 1
        raise OpenClawConfigError("unterminated string")
    if c in "{[":
        return _members(text, i)[1] + 1
    m = re.compile(r"[^,\s\]}/]+").match(text, i)
    if not m:
        raise OpenClawConfigError(f"cannot read a value at offset {i}")
    return m.end()


def _members(text: str, start: int) -> tuple[dict[str, tuple[int, int]], int]:
    """An object's keys → (value start, value end), and the offset of its closing ``}``;
    ``start`` is the offset of its ``{`` (of an array's ``[``: no keys, its ``]``)."""
    out: dict[str, tuple[int, int]] = {}
    close = "}" if text[start] == "{" else "]"
    j = _skip_ws(text, start + 1)
    while text[j] != close:
        key = None
        if close == "}":
            m = _KEY_RE.match(text, j)
            if not m:
                raise OpenClawConfigError(f"cannot read a key at offset {j}")
            key = next(g for g in m.groups() if g is not None)
            j = _skip_ws(text, m.end())
        end = _value_end(text, j)
        if key is not None:
            out[key] = (j, end)
        j = _skip_ws(text, end)
        if text[j] == ",":
            j = _skip_ws(text, j + 1)
    return out, j


def _find(text: str, path: tuple[str, ...]) -> tuple[tuple[int, int] | None, int, int]:
    """Where the value at ``path`` is; else the deepest existing object on the path
    (its ``{`` offset) and how many path keys it covers."""
    root = _skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    if root >= len(text) or text[root] != "{":
        raise OpenClawConfigError("the top level is not an object")
    obj, depth = root, 0
    for k, key in enumerate(path):
        members = _members(text, obj)[0]
        if key not in members:
            return None, obj, depth
        vs, ve = members[key]
        if k == len(path) - 1:
            return (vs, ve), obj, depth
        if text[vs] != "{":
            return None, -1, depth
        obj, depth = vs, k + 1
    return None, obj, depth


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 6))
    return json.dumps(value)


def _nested(keys: tuple[str, ...], value: Any, indent: str, step: str, nl: str) -> str:
    if len(keys) == 1:
        return f"{keys[0]}: {_literal(value)}"
    inner = _nested(keys[1:], value, indent + step, step, nl)
    return f"{keys[0]}: {{{nl}{indent}{step}{inner},{nl}{indent}}}"


def _inline(keys: tuple[str, ...], value: Any) -> str:
    if len(keys) == 1:
        return f"{keys[0]}: {_literal(value)}"
    return f"{keys[0]}: {{ {_inline(keys[1:], value)} }}"


def _indent(text: str, start: int) -> str:
    """The spaces and tabs that open the line starting at ``start``."""
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _insert(text: str, obj: int, keys: tuple[str, ...], value: Any) -> str:
    """Insert ``keys: value`` as the first member of the object at ``obj``, in its style."""
    line_start = text.rfind("\n", 0, obj) + 1
    base = _indent(text, line_start)
    members, close = _members(text, obj)
    if "\n" not in text[obj:close + 1]:  # an object written on one line stays on one line
        return text[:obj + 1] + f" {_inline(keys, value)}," + text[obj + 1:]
    step = "  "
    if members:
        first = min(vs for vs, _ in members.values())
        key_line = text.rfind("\n", 0, first) + 1
        member_indent = _indent(text, key_line)
        if len(member_indent) > len(base):
            step = member_indent[len(base):]
    indent = base + step
    nl = "\r\n" if "\r\n" in text else "\n"  # the file's own line ending
    entry = _nested(keys, value, indent, step, nl)
    after = obj + 1
    return text[:after] + f"{nl}{indent}{entry}," + text[after:]


def score_scale_notes(settings: SearchSettings) -> list[str]:
    """Why ``settings.min_score`` is not on OpenClaw's scale (empty when it is).

    OpenClaw gates the reference fusion's raw weighted sum. Our default profile calibrates the
    fused score into a probability, may fuse otherwise, and gates again (a vector floor, an
    abstention threshold): ``minScore: 0.01`` there is "1 % likely relevant", which OpenClaw
    would read as a raw score letting almost everything through.
    """
    notes = []
    if settings.calibration:
        notes.append(f"scores are calibrated into probabilities ({settings.calibration})")
    if settings.fusion != "reference":
        notes.append(f"the legs are fused by {settings.fusion}, not the reference's weighted sum")
    if settings.vector_floor > 0:
        notes.append(f"a vector floor of {settings.vector_floor:g} gates vector hits first")
    if settings.abstain_below > 0:
        notes.append(f"the search abstains below {settings.abstain_below:g}")
    return notes


def plan_export(path: Path, settings: SearchSettings, *, agent_index: int | None = None,
                only: list[str] | None = None) -> ExportPlan:
    """Plan writing ``settings`` (the keys of :data:`EXPORTED`, or ``only`` those) into the
    memory-search block of ``openclaw.json`` at ``path``: the agent's own block when
    ``agent_index`` names its ``agents.list`` entry and it has one, else ``memory.search`` if the
    file uses it, else ``agents.defaults.memorySearch``. Values equal to what the file says, or
    (when it says nothing) to the engine's default, are left alone."""
    old = read_config_text(path) if path.exists() else ""
    text = old if old.strip("\ufeff \t\r\n") else "{\n}\n"
    current = parse_openclaw_text(text, path)
    if not isinstance(current, dict):
        raise OpenClawConfigError(f"{path}: the top level must be an object")
    roots: list[tuple[str, ...]] = []
    if agent_index is not None:
        entry = dig(current, "agents", "list")
        if not isinstance(entry, list):
            entry = []
        block = entry[agent_index] if agent_index < len(entry) else None
        if isinstance(block, dict) and isinstance(block.get("memorySearch"), dict):
            roots.append(("agents", "list", str(agent_index), "memorySearch"))
    if isinstance(current.get("memory"), dict) and isinstance(current["memory"].get("search"),
                                                              dict):
        roots.append(("memory", "search"))
    roots.append(("agents", "defaults", "memorySearch"))
    root = roots[0]
    # what the engine uses when the file says nothing: a value equal to it is not written
    defaults = SearchSettings()
    if root == ("memory", "search"):  # 2026.8+: MMR and temporal decay on by default
        defaults.mmr_enabled = defaults.decay_enabled = True
    plan = ExportPlan(path, old, text)
    scale = score_scale_notes(settings)
    if scale and (only is None or "min_score" in only):
        plan.untranslated.append(
            f"minScore {settings.min_score:g} is not written: here {'; '.join(scale)}, while "
            "OpenClaw compares minScore with the raw weighted sum; its own minScore stays")
    for name, sub in EXPORTED.items():
        if (only is not None and name not in only) or (name == "min_score" and scale):
            continue
        value = getattr(settings, name)
        keys = root + sub
        if "list" in root:
            plan.refused.append(f"{'.'.join(keys)}: per-agent blocks inside agents.list are "
                                "not edited in place; apply the patch by hand")
            _set(plan.manual, keys, value)
            continue
        have = dig(current, *keys)
        if _same(getattr(defaults, name) if have is None else have, value):
            continue
        try:
            found, obj, depth = _find(plan.new_text, keys)
            if found:
                vs, ve = found
                plan.new_text = plan.new_text[:vs] + _literal(value) + plan.new_text[ve:]
            elif obj >= 0:
                plan.new_text = _insert(plan.new_text, obj, keys[depth:], value)
        except (OpenClawConfigError, RecursionError) as e:
            why = "nested too deeply to edit" if isinstance(e, RecursionError) else str(e)
            plan.refused.append(f"{'.'.join(keys)}: {why}")
            _set(plan.manual, keys, value)
            continue
        if not found and obj < 0:
            plan.refused.append(f"{'.'.join(keys)}: a value on the way is not an object")
            _set(plan.manual, keys, value)
            continue
        plan.changes.append(f"{'.'.join(keys)} = {_literal(value)}"
                            + (f" (was {_literal(have)})" if have is not None else " (new)"))
    try:
        after = parse_openclaw_text(plan.new_text, path)
    except OpenClawConfigError as e:
        plan.refused.append(f"the edited file would not parse ({e})")
        return plan
    for name, sub in EXPORTED.items():  # every value must read back as meant
        if name == "min_score" and scale:
            continue
        back = dig(after, *root, *sub)
        if (only is None or name in only) and "list" not in root and not _same(
                getattr(defaults, name) if back is None else back, getattr(settings, name)):
            plan.refused.append(f"{'.'.join((*root, *sub))} does not read back as written")
    return plan


def _set(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for k in keys[:-1]:
        data = data.setdefault(k, {})
    data[keys[-1]] = value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) < 1e-9
    return bool(a == b)


def apply_export(plan: ExportPlan) -> Path | None:
    """Write ``plan`` (backup first, atomic write); refuse (``OpenClawConfigError`` with the
    reasons; the patch is in ``plan.diff``) when it is not safe. Returns the backup path, or
    ``None`` when there was nothing to change or no previous file."""
    if not plan.ok:
        raise OpenClawConfigError("not rewriting openclaw.json: " + "; ".join(plan.refused))
    if not plan.changes:
        return None
    # a symlinked openclaw.json (dotfiles) is rewritten at its target, so the link stays
    target = Path(os.path.realpath(plan.path))
    backup = None
    if target.exists():
        mode = target.stat().st_mode
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
                target, os.W_OK):
            raise OpenClawConfigError(
                f"not rewriting {plan.path}: the file is read-only (mode "
                f"{stat.S_IMODE(mode):04o}); make it writable or apply the diff by hand")
        backup = _backup(plan.path, target.read_bytes())
    # compare and swap: a file changed since the plan read it is not overwritten
    old = plan.old_text.encode("utf-8") if target.exists() else b""
    try:
        rewrite_shared(target, lambda cur: _unchanged(cur, old, plan.new_text))
    except ContentChanged:
        _drop(backup)
        raise OpenClawConfigError(f"not rewriting {plan.path}: it changed while being "
                                  "exported; export again") from None
    return backup


def _unchanged(current: bytes, old: bytes, new_text: str) -> bytes:
    if current != old:
        raise ContentChanged("changed")
    return new_text.encode("utf-8")


def _drop(backup: Path | None) -> None:
    if backup is not None:
        backup.unlink(missing_ok=True)


def _backup(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new ``<name>.bak-<UTC time>`` beside ``path``; a name already taken
    (two exports in one second) gets ``-2``, ``-3``…, so no backup is ever overwritten."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 10_000):
        backup = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            with open(backup, "xb") as fh:  # exclusive: never replaces an earlier backup
                fh.write(data)
        except FileExistsError:
            continue
        return backup
    raise OpenClawConfigError(f"not rewriting {path}: no free backup name beside it")
