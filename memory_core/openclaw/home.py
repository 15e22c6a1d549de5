"""Opening an OpenClaw home (``~/.openclaw`` or any folder laid out like it).

A home holds ``openclaw.json`` (the settings), the agents' workspaces (``<home>/workspace`` by
default) and their session transcripts (``<home>/agents/<id>/sessions/``). :func:`open_home`
resolves one agent's workspace, sessions folder and memory-search settings the way OpenClaw
resolves them; :meth:`OpenClawHome.open_index` opens a :class:`~memory_core.MemoryIndex` on
that workspace with those settings layered under the workspace's own
``memory-workbench.toml``; :meth:`OpenClawHome.settings` lists each setting in force and where
it came from (reference default, ``openclaw.json``, workspace TOML, an override).

Nothing here writes into the home (the index lives in the workspace's ``.memory/``, as for
any workspace); :mod:`.export` writes ``openclaw.json`` only when asked.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.config import CONFIG_FILE, ChunkingConfig, MemoryConfig, load_config
from ..base.locations import unsafe_workspace
from ..index import MemoryIndex
from .config import (
    CONFIG_NAME,
    MappedSettings,
    OpenClawConfigError,
    agent_ids,
    agent_workspace,
    default_agent_id,
    memory_search_settings,
    normalize_agent_id,
    read_openclaw_json,
)

#: The profile an OpenClaw home opens with: its settings are the reference's settings.
HOME_PROFILE = "reference"

#: The settings the Home page lists, in order: our dotted key → a short label.
SHOWN_SETTINGS: dict[str, str] = {
    "profile": "profile",
    "sources.sources": "sources",
    "sources.extra_paths": "extra paths",
    "sources.sessions_dir": "sessions folder",
    "provider.provider": "embedding provider",
    "provider.model": "model",
    "provider.fallback": "fallback",
    "chunking.tokens": "chunk tokens",
    "chunking.overlap": "chunk overlap",
    "chunking.mode": "chunking mode",
    "search.max_results": "maxResults",
    "search.min_score": "minScore",
    "search.vector_weight": "vector weight",
    "search.text_weight": "text weight",
    "search.candidate_multiplier": "candidate multiplier",
    "search.hybrid": "hybrid",
    "search.mmr_enabled": "MMR",
    "search.mmr_lambda": "MMR lambda",
    "search.decay_enabled": "temporal decay",
    "search.half_life_days": "decay half-life (days)",
}


class OpenClawHomeError(ValueError):
    """The folder is not an OpenClaw home, or the agent is unknown: one line."""


@dataclass(frozen=True)
class SettingRow:
    """One setting in force: our key, its value, which layer set it, and the exact place."""

    key: str
    label: str
    value: Any
    source: str  # "reference default" | "openclaw.json" | "workspace TOML" | "override"
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "value": self.value,
                "source": self.source, "where": self.where}


@dataclass
class OpenClawHome:
    """One agent of an OpenClaw home, resolved."""

    root: Path
    agent: str
    agents: list[str]
    config_path: Path
    raw: dict[str, Any]
    workspace: Path
    workspace_from: str
    sessions_dir: Path
    mapped: MappedSettings

    def base_config(self) -> dict[str, Any]:
        """The ``openclaw.json`` layer in our config shape (``load_config``'s ``base``)."""
        base = copy.deepcopy(self.mapped.overrides)
        base["profile"] = HOME_PROFILE
        src = base.setdefault("sources", {})
        src["sessions_dir"] = str(self.sessions_dir)
        src["sessions_agent"] = self.agent
        return base

    def load_config(self, overrides: dict[str, Any] | None = None, *,
                    profile: str | None = None, provider: str | None = None) -> MemoryConfig:
        """Reference defaults → ``openclaw.json`` → the workspace's TOML → ``overrides``.

        ``profile`` switches profile afterwards; ``maxResults`` from ``openclaw.json`` is kept
        across the switch (it means the same under every fusion; ``minScore`` does not), and a
        profile other than the reference chunks as that profile does (unless the TOML or the
        overrides set ``chunking.mode``): the same index as ``memory-core -w <workspace>``.
        """
        cfg = load_config(self.workspace, overrides, base=self.base_config(),
                          base_source=str(self.config_path))
        if profile and profile != cfg.profile:
            # the workspace's and the caller's [search] keys stay; openclaw.json's are the
            # reference's, and only maxResults means the same under every profile
            explicit = _toml_keys(self.workspace / CONFIG_FILE) | _flat_keys(overrides or {})
            own = {k.partition(".")[2] for k in explicit if k.startswith("search.")}
            if "search.max_results" in self.mapped.provenance:
                own.add("max_results")
            cfg = cfg.with_profile(profile, keep=own)
            if profile != "reference" and "chunking.mode" not in explicit:
                # the reference chunking came with the home's profile, not from the user:
                # another profile chunks as it does everywhere else (`-w` on the CLI)
                cfg.chunking.mode = ChunkingConfig().mode
        if provider:
            cfg.provider.provider = provider
        return cfg

    def open_index(self, *, profile: str | None = None, provider: str | None = None,
                   overrides: dict[str, Any] | None = None) -> MemoryIndex:
        """A :class:`MemoryIndex` on the agent's workspace with the home's settings."""
        cfg = self.load_config(overrides, profile=profile, provider=provider)
        return MemoryIndex.open(self.workspace, config=cfg)

    def settings(self, cfg: MemoryConfig | None = None,
                 overrides: dict[str, Any] | None = None) -> list[SettingRow]:
        """Every setting of :data:`SHOWN_SETTINGS` in force and where it came from.

        Precedence, highest first: ``overrides`` (the workbench's sliders, CLI flags; their
        values are shown), the workspace's ``memory-workbench.toml``, ``openclaw.json``, the
        reference default.
        """
        cfg = cfg or self.load_config(overrides)
        toml = _toml_keys(self.workspace / CONFIG_FILE)
        ui = _flat_keys(overrides or {})
        settings = cfg.settings()
        rows: list[SettingRow] = []
        for key, label in SHOWN_SETTINGS.items():
            section, _, name = key.partition(".")
            if section == "search":
                value: Any = getattr(settings, name)
            elif name:
                value = getattr(getattr(cfg, section), name)
            else:
                value = getattr(cfg, section)
            if key in ui:  # the override's own value (the sliders' value is the one in force)
                value = _flat_value(overrides or {}, key)
            if key == "sources.extra_paths":
                value = [e.path if e.pattern == "**/*.md" else f"{e.path} ({e.pattern})"
                         for e in value]
            if key in ui:
                src, where = "override", "workbench / command line"
            elif key in toml:
                src, where = "workspace TOML", f"{self.workspace / CONFIG_FILE} [{section}] {name}"
            elif key in self.mapped.provenance:
                where = self.mapped.provenance[key]
                src = ("reference default" if where.startswith("reference default")
                       else "openclaw.json")
            elif key == "sources.sessions_dir":
                src, where = "OpenClaw layout", "<home>/agents/<agent>/sessions"
            elif key == "profile":
                src, where = "OpenClaw home", "a home opens with the reference profile"
            else:
                src, where = "reference default", "OpenClaw 2026.5.20 default"
            rows.append(SettingRow(key, label, value, src, where))
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {"home": str(self.root), "agent": self.agent, "agents": self.agents,
                "config": str(self.config_path), "workspace": str(self.workspace),
                "workspaceFrom": self.workspace_from, "sessionsDir": str(self.sessions_dir),
                "sessionMemory": self.mapped.session_memory, "notes": self.mapped.notes}


def _flat_keys(data: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for k, v in data.items():
        key = f"{prefix}{str(k).replace('-', '_')}"
        if isinstance(v, dict):
            out |= _flat_keys(v, key + ".")
        else:
            out.add(key)
    return out


def _flat_value(data: dict[str, Any], key: str) -> Any:
    value: Any = data
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _toml_keys(path: Path) -> set[str]:
    """The dotted keys a workspace TOML sets (``{}`` when there is none or it cannot parse:
    loading the config reports that error, not this listing)."""
    if not path.is_file():
        return set()
    try:
        return _flat_keys(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return set()


def is_openclaw_home(path: Path | str) -> bool:
    """Whether ``path`` looks like an OpenClaw home: ``openclaw.json`` or an ``agents/`` folder."""
    p = Path(path).expanduser()
    return (p / CONFIG_NAME).is_file() or (p / "agents").is_dir()


def open_home(root: Path | str, agent: str | None = None) -> OpenClawHome:
    """Resolve ``agent`` (default: the configured default agent, else ``main``) of the home at
    ``root``. Raises :class:`OpenClawHomeError` (one line) for a folder that is not a home or
    an agent that is neither configured nor has a sessions folder."""
    home = Path(os.path.realpath(Path(root).expanduser()))  # a loop: no folder
    if not home.is_dir():
        raise OpenClawHomeError(f"OpenClaw home {root} is not a folder")
    if not is_openclaw_home(home):
        raise OpenClawHomeError(f"{root} is not an OpenClaw home (no {CONFIG_NAME} and no "
                                "agents/ folder)")
    cfg_path = home / CONFIG_NAME
    try:
        raw = read_openclaw_json(cfg_path)
    except OpenClawConfigError as e:
        raise OpenClawHomeError(str(e)) from None
    ids = agent_ids(raw)
    on_disk = sorted(p.name for p in (home / "agents").iterdir()
                     if p.is_dir()) if (home / "agents").is_dir() else []
    known = ids + [a for a in on_disk if a not in ids]
    aid = normalize_agent_id(agent) if agent else default_agent_id(raw)
    if aid not in known:
        raise OpenClawHomeError(f"agent {aid!r} is not in {cfg_path.name} nor under "
                                f"{home / 'agents'} (known: {', '.join(known)})")
    workspace, ws_from = agent_workspace(raw, aid, home)
    if not workspace.is_dir():
        raise OpenClawHomeError(f"agent {aid!r}: workspace {workspace} ({ws_from}) does not "
                                "exist")
    why = unsafe_workspace(workspace)
    if why:
        raise OpenClawHomeError(f"agent {aid!r}: workspace {workspace} ({ws_from}) is {why}; "
                                "refused, since its index would be written there")
    return OpenClawHome(home, aid, known, cfg_path, raw, workspace.resolve(), ws_from,
                        home / "agents" / aid / "sessions", memory_search_settings(raw, aid))
