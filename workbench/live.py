"""The workbench, live: it follows the files and shows changes without a restart (issue #15.6).

Three parts, all plumbing between Streamlit and :mod:`memory_core.live`:

* **Who follows the files.** A ``memory-core watch`` or ``memory-core mcp`` process leaves a
  heartbeat beside the index (:func:`memory_core.live.live_watcher`). When none is alive, the
  workbench follows the workspace itself: one background :class:`LiveIndex` per open index per
  server process (``st.cache_resource``), sharing the workbench's own :class:`MemoryIndex`
  (``share_index``: same model, same lock, nothing loaded twice). People who keep the workbench
  open while an agent writes diaries expect them to show up, the way the reference's gateway
  follows its files; a Streamlit server is long-running, so a watcher thread in it is cheap (one
  ``watchfiles`` thread and one idle sync thread). It is not started for read-only evaluation
  data (it never changes), when ``[watch] enabled = false``, or with
  ``$MEMORY_WORKBENCH_NO_WATCH`` set (the tests, which must decide when syncs happen).
* **Fresh caches.** :func:`refresh` (every full run of every page) reads the index generation
  (one meta read) and, when another thread or process committed a sync, bumps the workbench's
  generation so cached candidates and measurements are refetched. A file swapped by another
  process's rebuild (a new inode) makes the open index reconnect first.
* **The indicator.** A fragment in the sidebar polls every :data:`POLL_S` seconds: live /
  syncing… / not watched, the generation and the time of the last sync. When the generation
  moved, Home and Chunks rerun at once (:data:`AUTO_REFRESH`); other pages, whose results may
  come from a button press that a rerun would clear, offer a Refresh button instead. Each poll
  and each full run also freezes the objects of newly imported modules
  (:func:`workbench.heap.freeze_imports`): an index built in this process imports the model's
  libraries, and Streamlit's full collection after every run would walk them all again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import streamlit as st

from memory_core import MemoryIndex
from memory_core.base.synclock import sync_running
from memory_core.live import Heartbeat, HeartbeatWriter, LiveIndex, live_watcher, read_heartbeat

from . import heap, state
from .state import IndexKey

#: Seconds between two polls of the index generation by the sidebar's fragment.
POLL_S = 2.0
#: Pages (``url_path``) that rerun as soon as the index changed; "" is Home.
AUTO_REFRESH = frozenset({"", "chunks"})
#: What the workbench's own watcher writes as the heartbeat's owner.
OWNER = "memory workbench"
Kind = Literal["external", "workbench", "none"]


@dataclass(frozen=True)
class Follower:
    """Who follows the files of an index: another process, this workbench, or nobody (why)."""

    kind: Kind
    heartbeat: Heartbeat | None = None
    reason: str = ""

    @property
    def live(self) -> bool:
        return self.kind != "none"


def watch_disabled(key: IndexKey, idx: MemoryIndex) -> str:
    """Why the workbench must not follow this index itself ("" when it may)."""
    if os.environ.get("MEMORY_WORKBENCH_NO_WATCH"):
        return "$MEMORY_WORKBENCH_NO_WATCH is set"
    if state.store_overrides(key.workspace) is not None:
        return "read-only data (it never changes)"
    if idx.readonly:
        return "opened read-only ($MEMORY_WORKBENCH_READONLY)"
    if not idx.config.watch.enabled:
        return "[watch] enabled = false in the workspace's config"
    return ""


class YieldingHeartbeat(HeartbeatWriter):
    """The workbench's own heartbeat: it never overwrites another process's live beat.

    Two followers of one index take turns writing the one heartbeat file, so a reader sees
    whichever wrote last. The workbench's watcher is only a stand-in for a ``memory-core watch``
    or ``mcp`` process: while one of those beats, this one keeps quiet, so the other is the one
    named, and :func:`ensure_follower` then stops the workbench's watcher (it yields).
    """

    def beat(self) -> None:
        hb = read_heartbeat(self.index_path)
        if hb is not None and hb.pid != os.getpid() and hb.alive:
            return
        super().beat()


@st.cache_resource(show_spinner=False, on_release=lambda live: live.close())
def _own_watcher(workspace: str, profile: str, provider: str, home: str, agent: str
                 ) -> LiveIndex:
    """The workbench's watcher of one open index (one per server process)."""
    idx = state.open_index(IndexKey(workspace, profile, provider, home, agent))
    live = LiveIndex(idx, owner=OWNER, share_index=True)
    if live.heartbeat is not None:
        live.heartbeat = YieldingHeartbeat(live.store_path, owner=OWNER,
                                           workspace=live.workspace)
    return live.start()


def _own(key: IndexKey) -> LiveIndex:
    return _own_watcher(key.workspace, key.profile, key.provider, key.home, key.agent)


def stop_watchers() -> None:
    """Stop every watcher this process started (tests; a server stops them at exit)."""
    _own_watcher.clear()


def ensure_follower(key: IndexKey) -> Follower:
    """Start the workbench's watcher unless another process's heartbeat is alive (then stop
    it, if it runs: the other one follows the files); say who follows them now."""
    idx = state.open_index(key)
    hb = live_watcher(idx.store_path)
    if hb is not None and hb.pid != os.getpid():
        # stop the workbench's own watcher, if it runs: two would sync one index twice
        _own_watcher.clear(key.workspace, key.profile, key.provider, key.home, key.agent)
        return Follower("external", hb)
    why = watch_disabled(key, idx)
    if why:
        return Follower("none", hb, why)
    _own(key)
    return Follower("workbench", live_watcher(idx.store_path))


# --------------------------------------------------------------------------- fresh caches


@st.cache_resource(show_spinner=False)
def _tracker() -> dict[IndexKey, tuple[int, int]]:
    """Process-wide: per open index, the (generation, inode) last seen."""
    return {}


def _inode(path: Path) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return 0


def index_generation(key: IndexKey) -> int:
    """The index's committed generation (one meta read), reconnecting after a file swap; bumps
    the workbench's own generation (its caches' key) when it moved since last seen."""
    idx = state.open_index(key)
    seen = _tracker()
    ino = _inode(idx.store_path)
    before = seen.get(key)
    if before is not None and before[1] != ino:
        idx.close()  # another process's rebuild replaced the file: read the new one
    gen = idx.generation
    if before is not None and before[0] != gen:
        state.bump_generation(key)
    seen[key] = (gen, ino)
    return gen


def refresh(key: IndexKey) -> int:
    """On a full run: refresh stale caches and remember the generation this run draws."""
    gen = index_generation(key)
    st.session_state.setdefault("wb_live_drawn", {})[key] = gen
    return gen


def _last_sync_at(key: IndexKey, gen: int) -> int | None:
    """``status().last_sync_at``, read once per generation (one meta read)."""
    cache: dict[tuple[IndexKey, int], int | None] = st.session_state.setdefault(
        "wb_live_synced_at", {})
    if (key, gen) not in cache:
        try:
            cache[(key, gen)] = state.open_index(key).last_sync_at
        except Exception:  # a damaged or refused index: the page itself says why
            cache[(key, gen)] = None
    return cache[(key, gen)]


def clock(ms: int | None) -> str:
    """Epoch ms as the local time of day (with the date when it is not today)."""
    if not ms:
        return "never"
    t = time.localtime(ms / 1000)
    today = time.localtime()
    fmt = "%H:%M:%S" if t[:3] == today[:3] else "%Y-%m-%d %H:%M:%S"
    return time.strftime(fmt, t)


# --------------------------------------------------------------------------- the indicator


def indicator_text(follower: Follower, syncing: bool, gen: int, last_sync_at: int | None
                   ) -> str:
    """The indicator's Markdown: live / syncing… / not watched, generation, last sync."""
    if syncing:
        head = ":orange[:material/sync: **syncing…**]"
    elif follower.live:
        head = ":green[:material/radio_button_checked: **live**]"
    else:
        head = ":gray[:material/radio_button_unchecked: **not watched**]"
    return f"{head} · generation {gen} · last sync {clock(last_sync_at)}"


def follow(key: IndexKey, *, auto_refresh: bool) -> Follower:
    """Every page, every full run: keep the files followed, refresh stale caches, and draw the
    sidebar's live indicator (rerunning the page when the index changes if ``auto_refresh``)."""
    follower = ensure_follower(key)
    refresh(key)
    heap.freeze_imports()
    with st.sidebar:
        _indicator(key, auto_refresh)
    return follower


@st.fragment(run_every=POLL_S)
def _indicator(key: IndexKey, auto_refresh: bool) -> None:
    # an index built in this process since the last poll imported the model's libraries
    heap.freeze_imports()
    gen = index_generation(key)
    drawn = st.session_state.get("wb_live_drawn", {}).get(key)
    follower = ensure_follower(key)  # a watcher that died is replaced within one poll
    syncing = sync_running(state.open_index(key).store_path)
    st.caption(indicator_text(follower, syncing, gen, _last_sync_at(key, gen)),
               help=follower_text(key, follower))
    if drawn is not None and gen != drawn:
        if auto_refresh:
            st.rerun(scope="app")
        st.caption(f"The index changed (generation {drawn} → {gen}).")
        if st.button("Refresh", key="wb_live_refresh", icon=":material/refresh:"):
            st.rerun(scope="app")


def watch_command(key: IndexKey) -> str:
    """The ``memory-core watch`` command line that follows this index."""
    where = (f"--openclaw-home {key.home}" + (f" --agent {key.agent}" if key.agent else "")
             if key.home else f"-w {key.workspace}")
    extra = (f" --profile {key.profile}" if key.profile != "default" else "") + (
        f" --provider {key.provider}" if key.provider else "")
    return f"memory-core watch {where}{extra}"


def follower_text(key: IndexKey, follower: Follower) -> str:
    """One line for Home: who follows the files, or how to make someone follow them."""
    hb = follower.heartbeat
    if follower.kind == "external" and hb is not None:
        return (f"live: watcher running (pid {hb.pid}, `{hb.owner}`, since "
                f"{clock(hb.started_at)}, last beat {hb.age_s:.0f} s ago)")
    if follower.kind == "workbench":
        return (f"live: this workbench follows the files (watcher thread in pid {os.getpid()}; "
                "no `memory-core watch` or `mcp` was running for this index)")
    return (f"not watched — run `{watch_command(key)}` to follow the files"
            + (f" (the workbench does not: {follower.reason})" if follower.reason else ""))


def home_note(key: IndexKey) -> None:
    """Home: the follower line (green when live)."""
    follower = ensure_follower(key)
    icon = (":green[:material/radio_button_checked:]" if follower.live
            else ":gray[:material/radio_button_unchecked:]")
    st.caption(f"{icon} {follower_text(key, follower)}")
