"""The workbench's shared state: which workspace is open, its cached index, cached candidates.

Everything here is plumbing between Streamlit and :class:`memory_core.MemoryIndex`: no SQL and no
ranking. One :class:`MemoryIndex` is kept per (workspace, profile, provider) for the whole server
(``st.cache_resource``); a query's :class:`memory_core.Candidates` are fetched once and kept in
the session, so that moving a slider only re-fuses them.

Environment variables (used by the tests and the browser test):

* ``MEMORY_WORKBENCH_WORKSPACE``: the default workspace (else the demo workspace);
* ``MEMORY_WORKBENCH_OPENCLAW_HOME``: an OpenClaw home to open first (``make run``: the rich
  demo, ``examples/demo-home``); the sidebar then starts on "OpenClaw home";
* ``MEMORY_WORKBENCH_PROVIDER``: the default embedding provider (else the workspace's config);
* ``MEMORY_WORKBENCH_CACHE``: the cache folder (else ``~/.cache/memory-workbench``), where
  indexes of read-only workspaces and embedding-map coordinates live;
* ``MEMORY_WORKBENCH_DATASETS``: the evaluation data (else ``../shared/datasets``);
* ``MEMORY_WORKBENCH_READONLY``: open every index read-only and never sync it (a viewer of an
  index another process owns, e.g. ``benchmarks/bench_pages.py`` on the 1M benchmark index);
* ``MEMORY_WORKBENCH_OVERRIDES``: config overrides as JSON, over the workspace's own config
  (e.g. the benchmark's embedding server: ``{"provider": {"base_url": …}}``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from memory_core import Candidates, MemoryIndex, SearchSettings, WorkspaceError
from memory_core.base.config import ProfileName
from memory_core.base.indexfiles import IndexFiles
from memory_core.base.locations import REPO_ROOT, cache_root, datasets_dir
from memory_core.base.lru import Lru
from memory_core.openclaw import OpenClawHome, open_home
from memory_core.write.sync import SyncReport

from .tuning import TUNABLE, apply_values

if TYPE_CHECKING:
    from memory_core.backends import MemoryBackend

ROOT = REPO_ROOT
DEMO = ROOT / "examples" / "demo-workspace"
#: The profiles offered in the sidebar, the first one preselected.
PROFILES: tuple[ProfileName, ...] = ("default", "reference")
#: Provider choices offered in the sidebar; "" means "what the workspace's config says".
PROVIDERS: tuple[str, ...] = ("", "local", "e5", "none")
PROVIDER_LABELS = {"": "config", "local": "local", "e5": "e5", "none": "none"}
WS_MODES: tuple[str, ...] = ("default", "dataset", "folder", "openclaw")
WS_MODE_LABELS = {"default": "Default workspace", "dataset": "Dataset workspace",
                  "folder": "Any folder", "openclaw": "OpenClaw home"}
_CANDIDATE_CACHE_SIZE = 48


# --------------------------------------------------------------------------- locations


def default_workspace() -> str:
    """``$MEMORY_WORKBENCH_WORKSPACE`` or the demo workspace."""
    return os.environ.get("MEMORY_WORKBENCH_WORKSPACE") or str(DEMO)


def default_home() -> str:
    """``$MEMORY_WORKBENCH_OPENCLAW_HOME`` or ``~/.openclaw``: the home the sidebar offers."""
    return (os.environ.get("MEMORY_WORKBENCH_OPENCLAW_HOME")
            or str(Path("~/.openclaw").expanduser()))


def default_provider() -> str:
    """``$MEMORY_WORKBENCH_PROVIDER`` or "" (the workspace config's provider)."""
    p = os.environ.get("MEMORY_WORKBENCH_PROVIDER", "")
    return p if p in PROVIDERS else ""


def dataset_workspaces(root: Path | None = None) -> dict[str, str]:
    """Workspaces found in the evaluation data: ``{label: folder}``, empty when it is absent.

    A folder counts when it holds Markdown under ``memory/`` or transcripts in ``sessions/``, up
    to three levels down (LoCoMo's ``locomo-dev/markdown/conv-26``). Generated BEIR workspaces in
    the evaluation cache are listed too.
    """
    root = root or datasets_dir()
    out: dict[str, str] = {}
    if root.is_dir():
        for depth in ("*", "*/*", "*/*/*"):
            for d in sorted(root.glob(depth)):
                if d.is_dir() and _looks_like_workspace(d):
                    out[str(d.relative_to(root))] = str(d)
    gen = cache_root() / "eval" / "workspaces"
    if gen.is_dir():
        for d in sorted(gen.iterdir()):
            if (d / "memory").is_dir():
                out[f"generated: {d.name}"] = str(d)
    return out


def _looks_like_workspace(d: Path) -> bool:
    mem, ses = d / "memory", d / "sessions"
    return ((mem.is_dir() and next(mem.glob("*.md"), None) is not None)
            or (ses.is_dir() and next(ses.glob("*.jsonl"), None) is not None))


def read_only() -> bool:
    """``$MEMORY_WORKBENCH_READONLY``: indexes are opened read-only and never synced."""
    return os.environ.get("MEMORY_WORKBENCH_READONLY", "") not in ("", "0")


def env_overrides() -> dict[str, Any]:
    """``$MEMORY_WORKBENCH_OVERRIDES`` (a JSON object of config sections), or ``{}``."""
    raw = os.environ.get("MEMORY_WORKBENCH_OVERRIDES", "").strip()
    if not raw:
        return {}
    got = json.loads(raw)
    if not isinstance(got, dict):
        raise ValueError("$MEMORY_WORKBENCH_OVERRIDES must be a JSON object")
    return got


def _merged(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any] | None:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in (a or {}).items()}
    for k, v in b.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out or None


def store_overrides(workspace: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Index store outside ``workspace`` when it is evaluation data or not writable.

    The shared datasets are licensed for evaluation and must never gain files, even when the
    process could write there (it often runs as root), so their indexes live in the cache.
    """
    ws = Path(os.path.expanduser(str(workspace))).resolve()
    if not ws.is_relative_to(datasets_dir().resolve()) and os.access(ws, os.W_OK):
        return None
    slug = hashlib.sha256(str(ws).encode()).hexdigest()[:10]
    folder = cache_root() / "stores" / f"{ws.name}-{slug}"
    return {"store": {"path": str(folder / "{chunking}-{provider}.sqlite")}}


# --------------------------------------------------------------------------- the open index


@dataclass(frozen=True)
class IndexKey:
    """Identifies one open index: the workspace folder, the profile, the provider override."""

    workspace: str
    profile: str = "default"
    provider: str = ""
    home: str = ""  # an OpenClaw home (its agent's workspace and openclaw.json settings)
    agent: str = ""

    def label(self) -> str:
        prov = self.provider or "config"
        return f"{Path(self.workspace).name} · {self.profile} · {prov}"


@dataclass
class _IndexState:
    """Process-wide facts about an open index: synced once, and a generation per sync."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    synced: bool = False
    generation: int = 0


@st.cache_resource(show_spinner=False)
def _open(workspace: str, profile: str, provider: str, home: str = "",
          agent: str = "") -> tuple[MemoryIndex, _IndexState]:
    if home:  # the agent's workspace with the home's settings (memory_core.openclaw)
        idx = open_home(home, agent or None).open_index(profile=profile,
                                                        provider=provider or None)
        return idx, _IndexState()
    idx = MemoryIndex.open(workspace, profile=profile, provider=provider or None,
                           overrides=_merged(store_overrides(workspace), env_overrides()))
    if read_only():
        idx.readonly = True
    return idx, _IndexState()


def open_index(key: IndexKey) -> MemoryIndex:
    """The (cached, not necessarily synced) index for ``key``."""
    return _open(key.workspace, key.profile, key.provider, key.home, key.agent)[0]


def _state(key: IndexKey) -> _IndexState:
    return _open(key.workspace, key.profile, key.provider, key.home, key.agent)[1]


_qmd_lock = threading.Lock()
_qmd_backends: dict[IndexKey, MemoryBackend] = {}


def qmd_backend(key: IndexKey) -> MemoryBackend:
    """The qmd backend (``memory_core.backends``) over ``key``'s open index, kept open.

    One that answered from builtin (qmd could not open, or a search failed) is replaced at the
    next call, as the reference evicts it; the backend waits out the 60 s open-failure cooldown
    itself. Evaluation data gains no file: qmd's folders then go beside the index, in the cache.
    """
    from memory_core.backends import open_backend

    with _qmd_lock:
        kept = _qmd_backends.pop(key, None)
        if kept and kept.fallback is None:
            _qmd_backends[key] = kept
            return kept
        if kept:
            kept.release()  # the index itself stays open: the pages share it
        idx = open_index(key)
        home = (idx.store_path.parent / "qmd") if store_overrides(key.workspace) else None
        backend = _qmd_backends[key] = open_backend(idx, "qmd", qmd_home=home)
        return backend


def current_home(key: IndexKey) -> OpenClawHome | None:
    """The OpenClaw home (and agent) ``key`` was opened from, or ``None`` for a folder."""
    if not key.home:
        return None
    # parsed once per state of openclaw.json (JSON5, ~40 ms a parse: every rerun of every page
    # on a home paid it)
    stamp = file_stamp(Path(key.home).expanduser() / "openclaw.json")
    return memo("openclaw-home", key, stamp,
                lambda: open_home(key.home, key.agent or None))


def generation(key: IndexKey) -> int:
    """Bumped by every sync the workbench runs: cached candidates of older ones are stale."""
    return _state(key).generation


def current_key() -> IndexKey:
    """The index chosen in the sidebar (the defaults before the sidebar has run)."""
    ss = st.session_state
    return ss.get("wb_key") or IndexKey(str(Path(default_workspace()).resolve()), "default",
                                        default_provider())


def workspace_picker() -> IndexKey:
    """Sidebar: workspace (default, a dataset one, any folder), profile and provider.

    Stores the chosen :class:`IndexKey` in ``st.session_state["wb_key"]`` and returns it; shows
    an error and stops the page when the folder does not exist.
    """
    sb = st.sidebar
    sb.subheader("Workspace")
    datasets = dataset_workspaces()
    modes = [m for m in WS_MODES if m != "dataset" or datasets]
    if "wb_ws_mode" not in st.session_state and os.environ.get("MEMORY_WORKBENCH_OPENCLAW_HOME"):
        st.session_state["wb_ws_mode"] = "openclaw"  # a home to open first (make run's demo)
    mode = sb.radio("Open", modes, format_func=WS_MODE_LABELS.__getitem__, key="wb_ws_mode",
                    label_visibility="collapsed")
    if mode == "dataset":
        label = sb.selectbox("Dataset workspace", list(datasets), key="wb_ws_dataset")
        ws = datasets[label]
    elif mode == "folder":
        ws = sb.text_input("Folder", value=default_workspace(), key="wb_ws_folder",
                           help="Any folder laid out as an agent workspace (MEMORY.md, "
                                "memory/, sessions/).")
    elif mode == "openclaw":
        home_dir, agent, ws = _home_picker(sb)
        if not st.session_state.get("wb_oc_seen"):
            # a home's settings are the reference's: its profile is preselected, once, in the
            # run that draws the selectbox (set in a run that stops before it, the value would
            # reach the page but the browser would still show the widget's first option)
            st.session_state["wb_oc_seen"] = True
            st.session_state["wb_profile"] = "reference"
    else:
        ws = default_workspace()
        sb.caption(f"`{_short(ws)}`")
    c1, c2 = sb.columns(2)
    profile = c1.selectbox("Profile", PROFILES, key="wb_profile",
                           help="default: this project's tuned ranking; reference: OpenClaw "
                                "2026.5.20 to the constant.")
    if "wb_provider" not in st.session_state:
        st.session_state["wb_provider"] = default_provider()
    provider = c2.selectbox("Embeddings", PROVIDERS, key="wb_provider",
                            format_func=PROVIDER_LABELS.__getitem__,
                            help="config: the workspace's setting; local: all-MiniLM-L6-v2 "
                                 "in-process; e5: multilingual-e5-small; none: keyword only. "
                                 "Each choice has its own index.")
    path = Path(os.path.expanduser(ws.strip() or "."))
    if not path.is_dir():
        st.error(f"Workspace `{ws}` is not a folder.")
        st.stop()
    key = IndexKey(str(path.resolve()), profile, provider,
                   *((home_dir, agent) if mode == "openclaw" else ()))
    try:
        idx = open_index(key)
    except (WorkspaceError, ValueError) as e:
        st.error(f"Cannot open `{ws}`: {e}")
        st.stop()
    if store_overrides(key.workspace):
        sb.caption(f"Read-only data: its index lives in `{_short(str(idx.store_path))}`.")
    st.session_state["wb_key"] = key
    return key


def _home_picker(sb: Any) -> tuple[str, str, str]:
    """The OpenClaw-home part of the picker: the home folder and one of its agents; returns
    (home, agent, the agent's workspace). Stops the page with the reason when it cannot open."""
    home_dir = sb.text_input("OpenClaw home", value=default_home(),
                             key="wb_oc_home", help="A folder with openclaw.json and agents/ "
                             "(~/.openclaw): the agent's workspace, transcripts and settings.")
    try:
        first = open_home(home_dir)
    except ValueError as e:
        st.error(f"Cannot open the OpenClaw home: {e}")
        st.stop()
    agent = sb.selectbox("Agent", first.agents, index=first.agents.index(first.agent),
                         key="wb_oc_agent")
    try:
        chosen = first if agent == first.agent else open_home(home_dir, agent)
    except ValueError as e:
        st.error(f"Cannot open agent {agent}: {e}")
        st.stop()
    return str(chosen.root), chosen.agent, str(chosen.workspace)


def _short(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path.startswith(home) else path


# --------------------------------------------------------------------------- syncing


ProgressFn = Callable[[str, int, int], None]


def sync_index(key: IndexKey, *, force: bool = False, progress: ProgressFn | None = None
               ) -> SyncReport:
    """Sync the index of ``key``; when the sync changed it, bump its generation, so that cached
    candidates and measurements are computed again (a sync that wrote nothing keeps them: an
    evaluation's own sync must not make every later click search again)."""
    idx = open_index(key)
    state = _state(key)
    with state.lock:
        report = idx.sync(force=force, progress=progress)
        state.synced = True
        if report.full or report.wrote_anything:
            state.generation += 1
    return report


def bump_generation(key: IndexKey) -> None:
    """Mark the index changed by someone else (e.g. a promotion re-synced it)."""
    state = _state(key)
    with state.lock:
        state.generation += 1


def progress_bar(label: str) -> tuple[Any, ProgressFn]:
    """A Streamlit progress bar and a ``progress(stage, done, total)`` callback that fills it."""
    import time

    t0 = time.monotonic()
    bar = st.progress(0.0, text=f"{label}…")

    def progress(stage: str, done: int, total: int) -> None:
        # n of N and the time so far: a long first build is seen moving, not a blank page
        frac = min(1.0, done / total) if total else 0.0
        bar.progress(frac, text=f"{label}: {stage} {done:,} of {total:,} · "
                                f"{time.monotonic() - t0:.0f} s so far")

    return bar, progress


def index_caption(key: IndexKey) -> None:
    """One caption line saying which index the page reads: its file, profile, chunking and
    provider (a home's profile switch changes the chunking, hence the file)."""
    idx = open_index(key)
    cfg = idx.config
    st.caption(f"Reads the index `{_short(str(idx.store_path))}` · profile `{cfg.profile}` · "
               f"chunking {cfg.chunking.mode} · embeddings `{cfg.provider.provider}` · "
               f"generation {generation(key)}")


def ensure_indexed(key: IndexKey) -> MemoryIndex:
    """Sync once per server process (cheap when nothing changed), with a progress bar."""
    idx = open_index(key)
    if not _state(key).synced and not idx.readonly:
        bar, progress = progress_bar("Indexing")
        sync_index(key, progress=progress)
        bar.empty()
    return idx


# --------------------------------------------------------------------------- candidates


def get_candidates(key: IndexKey, query: str, settings: SearchSettings,
                   sources: Sequence[str] | None = None) -> Candidates:
    """Both legs' candidates for ``query``: fetched once, then served from the session.

    The cache key holds what the fetch depends on: the index and its generation, the query, the
    source filter, and the settings the engine declares as changing the fetch
    (:meth:`SearchSettings.fetch_key`). Fusion settings are not in it: changing them only
    re-fuses.
    """
    cache: Lru = st.session_state.setdefault("wb_candidates", Lru(_CANDIDATE_CACHE_SIZE))
    ck = (key, generation(key), query.strip(), tuple(sorted(sources or ())),
          settings.fetch_key())
    return cache.get_or(ck, lambda: ensure_indexed(key).candidates(
        query, sources=list(sources) if sources else None, settings=settings, auto_sync=False))


_memo = Lru(64)


def memo(kind: str, key: IndexKey, parts: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()`` once per (``kind``, index, index generation, ``parts``) for the server.

    What a page measured (the agent's real queries under two settings, an evaluation, the
    promotion candidates) is kept until the index changes or the settings do, so that a click
    elsewhere on the page reruns the script without searching again. ``parts`` holds what the
    result depends on besides the index (settings as their ``repr``). Shared by all sessions,
    like the open index it is computed from.
    """
    return _memo.get_or((kind, key, generation(key), parts), compute)


def view_memo(name: str, source: Any, parts: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()`` once per ``parts`` while ``source`` (a report, a candidate list) is the
    object the page shows, for this session: a click inside a fragment (issue #35) redraws the
    tables and figures it built for the same choice before instead of building them again."""
    slot = st.session_state.setdefault(f"wb_view_{name}", {})
    if slot.get(None) is not source:  # a new report or candidate list: forget the old views
        slot.clear()
        slot[None] = source
    if parts not in slot:
        slot[parts] = compute()
    return slot[parts]


def file_stamp(*paths: Path) -> tuple[tuple[int, int], ...]:
    """(mtime_ns, size) of each path and of its SQLite ``-wal`` beside it ((0, 0) when absent):
    a :func:`memo` part for what files the index generation does not follow (the promotion
    state, ``MEMORY.md``)."""
    out: list[tuple[int, int]] = []
    for p in paths:
        for f in (p, IndexFiles(p).wal):
            try:
                st_ = f.stat()
                out.append((st_.st_mtime_ns, st_.st_size))
            except OSError:
                out.append((0, 0))
    return tuple(out)


def transcripts(key: IndexKey) -> list[Any]:
    """The transcripts (``SourceFile`` listings) of an OpenClaw home's agent, else of the
    workspace's ``sessions/``."""
    from memory_core import openclaw as oc

    home = current_home(key)
    if home is not None:
        return oc.transcripts_of_home(home.sessions_dir, home.agent)
    return oc.transcripts_of_workspace(open_index(key).workspace)


def mined_queries(key: IndexKey, files: Sequence[Any]) -> list[Any]:
    """The agent's ``memory_search`` calls in ``files`` (``SourceFile`` listings of the
    transcripts, ``memory_core.openclaw``), parsed once per state of the transcripts (each
    listing carries its file's mtime and size): every rerun of Evaluate, Promotion and Real
    queries parsed them all again."""
    from memory_core import openclaw as oc

    stamp = tuple((f.abs, f.mtime_ms, f.size) for f in files)
    return list(memo("mined-queries", key, stamp, lambda: oc.mine_queries(files)))


# --------------------------------------------------------------------------- tuned settings


def tuning_scope(key: IndexKey) -> str:
    """What tuned values belong to: the profile *and* the provider, since a profile's defaults
    depend on the model (e5's vector weight is not MiniLM's): sliders tuned with one provider
    do not carry their weights over to another. The page reloads its widgets when it changes."""
    return f"{key.profile}|{key.provider}"


def tuned_values(key: IndexKey) -> dict[str, Any]:
    """The values the user tuned for this profile and provider (a copy; empty when untouched)."""
    return dict(st.session_state.get("wb_tuned", {}).get(tuning_scope(key), {}))


def set_tuned_values(key: IndexKey, values: dict[str, Any]) -> None:
    """Remember the tuned values (they outlive the page's widgets)."""
    st.session_state.setdefault("wb_tuned", {})[tuning_scope(key)] = {
        k: v for k, v in values.items() if k in TUNABLE}


def clear_tuned_values(key: IndexKey) -> None:
    st.session_state.setdefault("wb_tuned", {}).pop(tuning_scope(key), None)


def tuned_settings(key: IndexKey) -> SearchSettings:
    """The settings in force for the model in use (:meth:`MemoryIndex.settings`) with the
    tuned values applied (what Search & tune shows, A/B compares and the export writes)."""
    base = open_index(key).settings()
    return apply_values(base, tuned_values(key))


#: What side B of an A/B comparison can be (Search & tune's A/B tab and Evaluate).
B_LABELS = {"pinned": "pinned settings", "reference": "reference profile",
            "default": "default profile"}


def b_choices(key: IndexKey) -> list[str]:
    """Side B's choices: the pinned settings (once pinned), then the profiles, the one A is
    not first (a home opens on the reference: A = B would compare nothing)."""
    others = ["default", "reference"] if key.profile == "reference" else ["reference", "default"]
    return (["pinned"] if st.session_state.get("wb_pinned_b") else []) + others


def b_settings(key: IndexKey, choice: str) -> SearchSettings:
    """Side B's settings: the pinned ones, or a profile's own for the model ``key``'s index
    uses (with e5, the default profile's e5 weights, as the CLI, the library and MCP apply
    them)."""
    pinned = st.session_state.get("wb_pinned_b")
    idx = open_index(key)
    if choice == "pinned" and pinned:
        return apply_values(idx.settings(), pinned)
    return idx.profile_defaults(choice)


def shared_query() -> str:
    """The query typed last on any page (Search & tune and the map share it)."""
    return str(st.session_state.get("wb_query", ""))


def set_shared_query(q: str) -> None:
    st.session_state["wb_query"] = q
