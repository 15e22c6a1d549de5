"""``openclaw.json``: reading it (JSON5) and mapping its memory-search settings to ours.

OpenClaw keeps its configuration in ``<home>/openclaw.json``, a JSON5 file (comments, trailing
commas, unquoted keys). Memory search is configured under ``agents.defaults.memorySearch``
(2026.5) or ``memory.search`` (2026.8+), and per agent under ``agents.list[i].memorySearch`` /
``agents.list[i].memory.search``; the agent's block overrides the defaults key by key, and
``extraPaths`` are concatenated (``resolveMemorySearchConfig``, ``src/agents/memory-search.ts``).

:func:`memory_search_settings` returns the overrides in this project's configuration shape
(:class:`memory_core.base.config.MemoryConfig`) with, for every value, the ``openclaw.json`` key it
came from, so the workbench can show each setting's provenance.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from ..base.config import (
    PROVIDERS,
    SOURCE_NAMES,
    BatchConfig,
    SearchSettings,
    openclaw_keys,
    setting_meta,
)

CONFIG_NAME = "openclaw.json"

#: OpenClaw embedding providers → ours: our names (but e5, which OpenClaw lacks), and
#: ``openai-compatible`` for openai. ``auto`` (2026.5) and missing map to nothing: the
#: workbench's own default provider stays (the reference's ``auto`` picks whichever provider
#: has credentials, which cannot be known from the file).
PROVIDER_MAP: dict[str, str] = {"openai-compatible": "openai", **{
    p: p for p in PROVIDERS if p not in ("e5", "auto")}}


class OpenClawConfigError(ValueError):
    """``openclaw.json`` cannot be read or has a shape we cannot use: one line."""


#: ``openclaw.json`` larger than this is refused: a configuration is a few kilobytes, and the
#: pure-Python JSON5 parser reads ~200 KB/s (a 51 MB file took 9 minutes).
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Strict JSON of any size up to :data:`MAX_CONFIG_BYTES` is parsed by the stdlib (C, fast);
#: only a file that needs JSON5 (comments, trailing commas, unquoted keys) goes to ``json5``,
#: and only up to this size, so that no command waits more than a few seconds on it.
MAX_JSON5_BYTES = 512 * 1024


def parse_openclaw_text(text: str, where: Path | str) -> Any:
    """Parse the text of ``openclaw.json``: stdlib JSON first, JSON5 when that fails.

    A leading BOM is allowed (JSON5 counts it as white space). Raises
    :class:`OpenClawConfigError` (one line) for text that is not JSON5, nested too deeply for
    the parser, or JSON5 larger than :data:`MAX_JSON5_BYTES`.
    """
    body = text[1:] if text.startswith("\ufeff") else text
    try:
        return json.loads(body)
    except RecursionError:
        raise OpenClawConfigError(f"{where}: nested too deeply to read") from None
    except ValueError:
        pass  # not strict JSON: JSON5 below
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_JSON5_BYTES:
        raise OpenClawConfigError(
            f"{where}: {size / 1e6:.1f} MB of JSON5 is more than this reader parses "
            f"({MAX_JSON5_BYTES // 1024} KB; strict JSON is read up to "
            f"{MAX_CONFIG_BYTES // (1024 * 1024)} MB)")
    try:
        return json5.loads(body)
    except RecursionError:
        raise OpenClawConfigError(f"{where}: nested too deeply to read") from None
    except ValueError as e:  # json5 raises ValueError with a position
        raise OpenClawConfigError(f"{where}: not valid JSON5 ({e})") from None


def read_config_text(path: Path) -> str:
    """The text of ``openclaw.json`` exactly as stored (line endings and BOM kept), refused in
    one line when it cannot be read, is not UTF-8 or exceeds :data:`MAX_CONFIG_BYTES`."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise OpenClawConfigError(
                f"{path}: {size / 1e6:.1f} MB is too large for a configuration file (at most "
                f"{MAX_CONFIG_BYTES // (1024 * 1024)} MB are read)")
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read(MAX_CONFIG_BYTES + 1)
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e  # "Is a directory", not "[Errno 21] …"
        raise OpenClawConfigError(f"{path}: cannot read ({why})") from e


def read_openclaw_json(path: Path) -> dict[str, Any]:
    """Parse ``openclaw.json`` (JSON5); ``{}`` when the file does not exist."""
    if not path.exists():
        return {}
    text = read_config_text(path)
    if not text.strip("\ufeff \t\r\n"):
        return {}
    data = parse_openclaw_text(text, path)
    if not isinstance(data, dict):
        raise OpenClawConfigError(f"{path}: expects an object at the top level")
    return data


def dig(data: Any, *keys: str | int) -> Any:
    """``data[k1][k2]…`` through dicts (str keys) and lists (int keys), ``None`` when a step is
    missing or of another type."""
    for k in keys:
        if isinstance(k, int):
            if not isinstance(data, list) or k >= len(data):
                return None
            data = data[k]
        else:
            if not isinstance(data, dict):
                return None
            data = data.get(k)
    return data


#: A valid agent id (``VALID_ID_RE``, ``src/routing/session-key.ts``): path-safe as it stands.
_VALID_AGENT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.IGNORECASE | re.ASCII)
_INVALID_AGENT_CHARS = re.compile(r"[^a-z0-9_-]+")


def normalize_agent_id(value: Any) -> str:
    """``normalizeAgentId``: trimmed and lower-cased; an id that is not path-safe has each run
    of other characters turned into ``-``, outer dashes dropped and is cut to 64 characters,
    as the reference does, so ``../../tmp/x`` names the folder ``tmp-x`` inside the home;
    empty → ``main``."""
    s = str(value or "").strip()
    if not s:
        return "main"
    if _VALID_AGENT_ID.fullmatch(s):
        return s.lower()
    return _INVALID_AGENT_CHARS.sub("-", s.lower()).strip("-")[:64] or "main"


def agent_entries(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """``agents.list`` entries that are objects (``listAgentEntries``)."""
    lst = dig(raw, "agents", "list")
    return [e for e in lst if isinstance(e, dict)] if isinstance(lst, list) else []


def agent_ids(raw: dict[str, Any]) -> list[str]:
    """Configured agent ids, de-duplicated, in order; ``["main"]`` when none (``listAgentIds``)."""
    ids: list[str] = []
    for e in agent_entries(raw):
        aid = normalize_agent_id(e.get("id"))
        if aid not in ids:
            ids.append(aid)
    return ids or ["main"]


def default_agent_id(raw: dict[str, Any]) -> str:
    """The entry marked ``default``, else the first entry, else ``main``."""
    entries = agent_entries(raw)
    if not entries:
        return "main"
    chosen = next((e for e in entries if e.get("default")), entries[0])
    return normalize_agent_id(chosen.get("id"))


def agent_entry(raw: dict[str, Any], agent: str) -> tuple[int, dict[str, Any]] | None:
    aid = normalize_agent_id(agent)
    for i, e in enumerate(dig(raw, "agents", "list") or []):
        if isinstance(e, dict) and normalize_agent_id(e.get("id")) == aid:
            return i, e
    return None


@dataclass
class Blocks:
    """The memory-search blocks that apply to one agent, lowest precedence first, each with
    the dotted ``openclaw.json`` path it sits at."""

    blocks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def get(self, *keys: str) -> tuple[Any, str | None]:
        """The value of ``keys`` from the highest-precedence block that sets it, and where."""
        for where, block in reversed(self.blocks):
            v = dig(block, *keys)
            if v is not None:
                return v, where + "." + ".".join(keys)
        return None, None

    def concat(self, *keys: str) -> tuple[list[Any], list[str]]:
        """Every block's list at ``keys`` concatenated (``extraPaths``), with where each was."""
        out: list[Any] = []
        wheres: list[str] = []
        for where, block in self.blocks:
            v = dig(block, *keys)
            if isinstance(v, list) and v:
                out.extend(v)
                wheres.append(where + "." + ".".join(keys))
        return out, wheres


def memory_search_blocks(raw: dict[str, Any], agent: str) -> Blocks:
    """The blocks for ``agent``: 2026.5's ``agents.defaults.memorySearch`` and 2026.8's
    ``memory.search`` (the newer wins where both set a key), then the agent's own entry."""
    b = Blocks()
    for where, keys in (("agents.defaults.memorySearch", ("agents", "defaults", "memorySearch")),
                        ("memory.search", ("memory", "search"))):
        v = dig(raw, *keys)
        if isinstance(v, dict):
            b.blocks.append((where, v))
    found = agent_entry(raw, agent)
    if found:
        i, e = found
        for where, inner in ((f"agents.list[{i}].memorySearch", ("memorySearch",)),
                             (f"agents.list[{i}].memory.search", ("memory", "search"))):
            v = dig(e, *inner)
            if isinstance(v, dict):
                b.blocks.append((where, v))
    return b


@dataclass
class MappedSettings:
    """``openclaw.json``'s memory-search settings in our config shape.

    ``overrides`` is a partial :class:`~memory_core.base.config.MemoryConfig` dict (the ``base`` of
    :func:`memory_core.base.config.load_config`); ``provenance`` maps each of our dotted keys
    (``search.max_results``) to the ``openclaw.json`` key it came from; ``notes`` says what
    could not be carried over and why; ``enabled`` is ``memorySearch.enabled``.
    """

    overrides: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    enabled: bool = True
    session_memory: bool = False


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _put(m: MappedSettings, ours: str, value: Any, where: str | None) -> None:
    section, _, key = ours.partition(".")
    m.overrides.setdefault(section, {})[key] = value
    if where:
        m.provenance[ours] = where


def map_memory_search(blocks: Blocks) -> MappedSettings:
    """Map the blocks to our settings, key by key, as ``mergeConfig`` resolves them.

    Values are clamped the way the reference clamps them (minScore and weights to 0..1,
    candidate multiplier to 1..20, overlap below tokens); a value of the wrong type is left out
    with a note rather than refused, since OpenClaw itself would ignore or coerce it.
    """
    m = MappedSettings()
    enabled, _ = blocks.get("enabled")
    m.enabled = enabled is not False
    session_memory, sm_where = blocks.get("experimental", "sessionMemory")
    m.session_memory = session_memory is True
    sources, where = blocks.get("sources")
    if isinstance(sources, list):
        wanted = [s for s in sources if s in SOURCE_NAMES]
        kept = [s for s in wanted if s == "memory" or m.session_memory]
        if "sessions" in wanted and not m.session_memory:
            m.notes.append("sources lists \"sessions\" but experimental.sessionMemory is not "
                           "true: the reference drops it (normalizeSources)")
        _put(m, "sources.sources", kept or ["memory"], where)
    else:
        _put(m, "sources.sources", ["memory"], None)
        m.provenance["sources.sources"] = "reference default ([\"memory\"])"
    paths, wheres = blocks.concat("extraPaths")
    extra: list[dict[str, str]] = []
    seen: set[str] = set()
    for p in paths:
        item = ({"path": p.strip()} if isinstance(p, str)
                else {"path": str(p.get("path", "")).strip(),
                      **({"pattern": p["pattern"]} if isinstance(p.get("pattern"), str)
                         and p["pattern"].strip() else {})}
                if isinstance(p, dict) else None)
        if not item or not item["path"]:
            continue
        ident = item["path"] + "\0" + item.get("pattern", "")
        if ident not in seen:
            seen.add(ident)
            extra.append(item)
    if extra:
        _put(m, "sources.extra_paths", extra, " + ".join(wheres))
    provider, where = blocks.get("provider")
    if isinstance(provider, str) and provider.strip():
        mapped = PROVIDER_MAP.get(provider.strip().lower())
        if mapped:
            _put(m, "provider.provider", mapped, where)
        elif provider.strip().lower() != "auto":
            m.notes.append(f"provider {provider!r} has no equivalent here; the workbench's "
                           "default provider is used")
    model, where = blocks.get("model")
    if isinstance(model, str) and model.strip():
        _put(m, "provider.model", model.strip(), where)
    base_url, where = blocks.get("remote", "baseUrl")
    if isinstance(base_url, str) and base_url.strip():
        _put(m, "provider.base_url", base_url.strip(), where)
    api_key, _ = blocks.get("remote", "apiKey")
    if api_key:
        m.notes.append("remote.apiKey is not read from openclaw.json; put the key in the "
                       "OPENAI_API_KEY environment variable")
    _map_batch(m, blocks)
    fallback, where = blocks.get("fallback")
    if isinstance(fallback, str):
        fb = PROVIDER_MAP.get(fallback.strip().lower(), "none")
        _put(m, "provider.fallback", [fb] if fb != "none" else ["none"], where)
    tokens, where = blocks.get("chunking", "tokens")
    tok = _num(tokens)
    if tok is not None:
        _put(m, "chunking.tokens", max(1, int(tok)), where)
    overlap, where = blocks.get("chunking", "overlap")
    ov = _num(overlap)
    if ov is not None:
        limit = max(0, int(tok if tok is not None else 400) - 1)
        _put(m, "chunking.overlap", min(max(0, int(ov)), limit), where)
    _map_query(m, blocks)
    if sm_where:
        m.provenance["sources.session_memory"] = sm_where
    return m


def _map_batch(m: MappedSettings, blocks: Blocks) -> None:
    """``remote.batch`` {enabled, wait, concurrency, pollIntervalMs, timeoutMinutes} →
    ``[provider.batch]`` (spec §7.4); values of the wrong type are left out with a note."""
    batch: dict[str, Any] = {}
    wheres: list[str] = []
    defaults = BatchConfig()
    for ours, keys in openclaw_keys(BatchConfig).items():
        v, where = blocks.get(*keys)
        if v is None:
            continue
        n, kind = _num(v), type(getattr(defaults, ours))
        if kind is bool and isinstance(v, bool):
            batch[ours] = v
        elif kind is not bool and n is not None and n > 0:
            batch[ours] = max(1, int(n)) if kind is int else n
        else:
            m.notes.append(f"{where}: {'.'.join(keys)} {v!r} ignored")
            continue
        if where:
            wheres.append(where)
    if batch:
        _put(m, "provider.batch", batch, " + ".join(dict.fromkeys(wheres)) or None)


#: How a number read from ``query.*`` is made whole where the reference does not take its
#: integer part; every number is then clamped into the setting's declared range.
_WHOLE: dict[str, Callable[[float], Any]] = {
    "candidate_multiplier": round,
    "half_life_days": lambda v: float(max(1, math.floor(v))),
}


def _map_query(m: MappedSettings, blocks: Blocks) -> None:
    """``query.*`` and ``query.hybrid.*`` → our search settings (clamped as the reference); the
    keys are the settings' declared ones (:func:`memory_core.base.config.openclaw_keys`)."""
    for ours, keys in openclaw_keys(SearchSettings).items():
        v, where = blocks.get(*keys)
        meta = setting_meta(SearchSettings, ours)
        if isinstance(meta["default"], bool):
            if isinstance(v, bool):
                _put(m, "search." + ours, v, where)
            continue
        n = _num(v)
        if n is None:
            if v is not None:
                m.notes.append(f"{where}: expects a number (got {v!r}), ignored")
            continue
        n = _WHOLE[ours](n) if ours in _WHOLE else int(n) if isinstance(
            meta["default"], int) else n
        _put(m, "search." + ours, min(meta.get("le", n), max(meta.get("ge", n), n)), where)


def memory_search_settings(raw: dict[str, Any], agent: str) -> MappedSettings:
    """:func:`map_memory_search` of ``agent``'s blocks in the parsed ``openclaw.json``, and
    ``memory.citations`` (a setting of the whole ``memory`` block, not of an agent's search)."""
    m = map_memory_search(memory_search_blocks(raw, agent))
    citations = dig(raw, "memory", "citations")
    if citations in ("auto", "on", "off"):
        _put(m, "search.citations", citations, "memory.citations")
    elif citations is not None:
        m.notes.append(f"memory.citations {citations!r} is not auto, on or off; auto is used")
    return m


def agent_workspace(raw: dict[str, Any], agent: str, home: Path) -> tuple[Path, str]:
    """The agent's workspace (``resolveAgentWorkspaceDir``) and where it came from.

    The agent's own ``workspace``; else, for the default agent, ``agents.defaults.workspace``
    or ``<home>/workspace``; for another agent ``<agents.defaults.workspace>/<id>`` or
    ``<home>/workspace-<id>``. ``~`` is expanded; a relative path is taken from the home.
    """
    def resolve(p: str) -> Path:
        q = Path(p).expanduser()
        return q if q.is_absolute() else home / q

    aid = normalize_agent_id(agent)
    found = agent_entry(raw, aid)
    if found:
        i, e = found
        ws = e.get("workspace")
        if isinstance(ws, str) and ws.strip():
            return resolve(ws.strip()), f"agents.list[{i}].workspace"
    fallback = dig(raw, "agents", "defaults", "workspace")
    fallback = fallback.strip() if isinstance(fallback, str) else ""
    if aid == default_agent_id(raw):
        if fallback:
            return resolve(fallback), "agents.defaults.workspace"
        return home / "workspace", "reference default (<home>/workspace)"
    if fallback:
        return resolve(fallback) / aid, "agents.defaults.workspace + /<agent id>"
    return home / f"workspace-{aid}", "reference default (<home>/workspace-<agent id>)"


def dreaming_timezone(raw: dict[str, Any]) -> str | None:
    """The time zone dreaming's days are in: ``dreaming.timezone``, falling back to
    ``agents.defaults.userTimezone`` (spec §6.1), or ``None``."""
    for v in (dreaming_settings(raw).get("timezone"),
              dig(raw, "agents", "defaults", "userTimezone")):
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def dreaming_settings(raw: dict[str, Any]) -> dict[str, Any]:
    """``plugins.entries.memory-core.config.dreaming`` (the phases' settings), or ``{}``."""
    v = dig(raw, "plugins", "entries", "memory-core", "config", "dreaming")
    return v if isinstance(v, dict) else {}
