"""The qmd backend (spec §9): the external ``qmd`` CLI behind the backend face.

Follows OpenClaw 2026.5.20's ``QmdMemoryManager`` (``extensions/memory-core/src/memory/
qmd-manager.ts``; ``backend-config.ts`` for the defaults):

* collections ``memory-root-<agent>`` (the workspace, mask ``MEMORY.md``) and
  ``memory-dir-<agent>`` (``memory/``, ``**/*.md``), then ``[qmd] paths`` and ``[sources]
  extra_paths`` as ``custom-<n>-<agent>`` (``**/*.md`` unless a pattern is given); added with
  ``qmd collection add <path> --name <name> --mask <pattern>`` when ``collection list`` lacks
  them (or shows another pattern);
* search: ``qmd <search|vsearch|query> <q> --json -n <limit>`` with one ``-c <name>`` per
  collection of a source (one run per source when both memory and sessions are searched, merged
  by best score), limit ``min(maxResults 4, asked)``, timeout 4,000 ms; each result's ``docid``
  is looked up in qmd's own index (read-only) to find its collection and file, mapped back to a
  workspace path (``qmd/<collection>/<rel>`` outside the workspace); snippets cut at 450
  characters; lines from the snippet's ``@@ -start,count @@`` header; scores as qmd returns
  them; then the reference's source diversification and 2,200-character injection budget;
* sync: ``qmd update`` (debounced 15 s unless forced; three tries at boot on a busy database),
  then ``qmd embed`` in the vector modes (every 60 min);
* qmd's index and config live in per-agent XDG folders: ``<workspace>/.memory/qmd/<agent>/
  xdg-cache`` and ``xdg-config`` (``[qmd] home``), never ``~/.cache``.

Departures, each for a reason: a result with no hunk header takes qmd's own ``line`` (the
reference, which does not read ``line``, would cite lines 1..n of the snippet); vector modes
check for the GGUF models first and fail with "models missing" instead of letting qmd try a
download; the mcporter bridge is not implemented (off by default in the reference). The session
export (``[qmd.sessions]``, :mod:`.qmd_sessions`) refuses a folder that overlaps the user's.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..base.config import MemoryConfig
from ..base.sql import StoreLocked, connect, sqlite
from ..read.fusion import Hit
from ..read.query import cap_query
from ..read.reading import PathRefused, ReadResult, read_lines
from ..status import ChunkingInfo, FtsInfo, SourceCount, VectorInfo
from ..write.sources import is_readable_memory_path
from ..write.sync import SyncProgress
from .protocol import BackendSearch, BackendStatus, FallbackNote, OneByOne, OnHits
from .qmd_process import QmdError, parse_query_json, qmd_env, resolve_command, run_qmd
from .qmd_results import (
    clamp_injected,
    diversify_by_source,
    parse_collection_list,
    read_file_slice,
    snippet_lines,
)
from .qmd_sessions import ExportRefused, ExportReport, check_export_dir, export_sessions

#: The GGUF files each mode needs (qmd's defaults; ``QMD_*_MODEL`` may point elsewhere).
MODEL_FILES: dict[str, tuple[str, str]] = {
    "embed": ("QMD_EMBED_MODEL", "embeddinggemma-300M-Q8_0.gguf"),
    "rerank": ("QMD_RERANK_MODEL", "qwen3-reranker-0.6b-q8_0.gguf"),
    "generate": ("QMD_GENERATE_MODEL", "qmd-query-expansion-1.7B-q4_k_m.gguf"),
}
MODELS_FOR_MODE: dict[str, tuple[str, ...]] = {
    "search": (), "vsearch": ("embed",), "query": ("embed", "rerank", "generate")}
_DEFAULT_MEMORY_NAMES = ("MEMORY.md", "DREAMS.md", "dreams.md")
_UNSUPPORTED_RE = re.compile(r"unknown flag|unknown option|unrecognized option|"
                             r"flag provided but not defined|unexpected argument")
_VERSION_RE = re.compile(r"qmd\s+v?([0-9][0-9A-Za-z.+-]*)")
#: qmd's words for a collection (or document) it does not have.
_MISSING_RE = re.compile(r"not found|does not exist|missing")
#: A qmd docid: the first 6 (or more) hex digits of a document's hash.
_DOCID_RE = re.compile(r"[0-9a-fA-F]{6,64}")


def sanitize_name(text: str, default: str = "collection") -> str:
    """The reference's collection-name rule: lowercase, ``[a-z0-9-]``, no edge dashes."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or default


@dataclass(frozen=True)
class QmdCollection:
    """One qmd collection: a folder, a mask, and whether it holds memory or sessions."""

    name: str
    path: Path
    pattern: str
    kind: str  # "memory", "custom" or "sessions"

    @property
    def source(self) -> str:
        return "sessions" if self.kind == "sessions" else "memory"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "pattern": self.pattern,
                "kind": self.kind, "uri": f"qmd://{self.name}/"}


def qmd_agent_dir(workspace: Path, config: MemoryConfig) -> Path:
    """``<[qmd] home>/<agent>``: qmd's XDG folders and the default session export live here."""
    home = Path(os.path.expanduser(config.qmd.home))
    home = home if home.is_absolute() else workspace / home
    return home / sanitize_name(config.qmd.agent_id, "agent")


def session_export_dir(workspace: Path, config: MemoryConfig) -> Path:
    """``[qmd.sessions] export_dir`` (relative to the workspace); ``<agent dir>/sessions``
    by default."""
    raw = config.qmd.sessions.export_dir
    if not raw:
        return qmd_agent_dir(workspace, config) / "sessions"
    p = Path(os.path.expanduser(raw))
    return Path(os.path.normpath(p if p.is_absolute() else workspace / p))


def resolve_collections(workspace: Path, config: MemoryConfig) -> list[QmdCollection]:
    """The reference's collection list for this workspace and agent (``backend-config.ts``),
    with the session export's ``sessions-<agent>`` last when it is enabled."""
    q = config.qmd
    agent = sanitize_name(q.agent_id, "agent")
    names: set[str] = set()

    def unique(base: str) -> str:
        name = sanitize_name(base)
        if name not in names:
            names.add(name)
            return name
        n = 2
        while f"{name}-{n}" in names:
            n += 1
        names.add(f"{name}-{n}")
        return f"{name}-{n}"

    out: list[QmdCollection] = []
    if q.include_default_memory:
        out.append(QmdCollection(unique(f"memory-root-{agent}"), workspace, "MEMORY.md", "memory"))
        out.append(QmdCollection(unique(f"memory-dir-{agent}"), workspace / "memory", "**/*.md",
                                 "memory"))
    seen: set[tuple[str, str]] = set()
    extra = [*q.paths, *config.sources.extra_paths]
    for i, entry in enumerate(extra):
        raw = entry.path.strip()
        if not raw:
            continue
        p = Path(os.path.expanduser(raw))
        p = Path(os.path.normpath(p if p.is_absolute() else workspace / p))
        pattern = entry.pattern.strip() or "**/*.md"
        if (str(p), pattern) in seen:
            continue
        seen.add((str(p), pattern))
        out.append(QmdCollection(unique(f"custom-{i + 1}-{agent}"), p, pattern, "custom"))
    if q.sessions.enabled:
        out.append(QmdCollection(unique(f"sessions-{agent}"),
                                 session_export_dir(workspace, config), "**/*.md", "sessions"))
    return out


class QmdBackend(OneByOne):
    """The primary qmd manager for one workspace and agent (no fallback: see
    :class:`~memory_core.backends.fallback.FallbackBackend`). Raises :class:`QmdError`."""

    kind = "qmd"
    fallback: FallbackNote | None = None

    def __init__(self, workspace: Path, config: MemoryConfig) -> None:
        self.workspace = workspace
        self.config = config
        self.q = config.qmd
        self.qmd_dir = qmd_agent_dir(workspace, config)
        self.sessions_dir = session_export_dir(workspace, config) if self.q.sessions.enabled \
            else None
        self.xdg_config = self.qmd_dir / "xdg-config"
        self.xdg_cache = self.qmd_dir / "xdg-cache"
        self.index_path = self.xdg_cache / "qmd" / "index.sqlite"
        self.models_dir = self.xdg_cache / "qmd" / "models"
        self.env = qmd_env(self.xdg_config, self.xdg_cache)
        self.collections = resolve_collections(workspace, config)
        self.roots = {c.name: c for c in self.collections}
        self.warnings: list[str] = []
        self.last_update_at: float | None = None
        self.last_embed_at: float | None = None
        self.embed_backoff_until: float | None = None
        self.embed_failures = 0
        self.dirty = False
        self.pattern_flag = "--mask"
        self._multi_collection: bool | None = None
        self._version: str | None = None
        self._db: sqlite.Connection | None = None
        self._opened = False
        self._said_missing = False

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def release(self) -> None:
        self.close()  # qmd's own connection only: it was given no MemoryIndex

    def open(self, mode: str = "full") -> QmdBackend:
        """Create the XDG folders, share the user's downloaded models, add the collections.

        ``mode="status"`` only reads (the reference's status manager touches nothing).
        """
        if mode == "status" or self._opened:
            return self
        if self.sessions_dir is not None:
            try:
                check_export_dir(self.sessions_dir, self.workspace, self.config)
            except ExportRefused as e:
                raise QmdError(str(e)) from e
        for d in (self.xdg_config, self.xdg_cache, self.index_path.parent):
            d.mkdir(parents=True, exist_ok=True)
        self._share_models()
        self.ensure_collections()
        self._opened = True
        return self

    def _share_models(self) -> None:
        """Link ``~/.cache/qmd/models`` (if the user downloaded models) into our cache, as the
        reference does, so the vector modes can use them; never writes in the user's folder."""
        default_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        shared = Path(default_cache) / "qmd" / "models"
        if not shared.is_dir() or self.models_dir.exists() or self.models_dir.is_symlink():
            return
        try:
            self.models_dir.symlink_to(shared, target_is_directory=True)
        except OSError as e:
            self.warnings.append(f"failed to symlink qmd models directory: {e}")

    def run(self, args: Sequence[str], timeout_ms: int | None, *,
            discard_stdout: bool = False) -> Any:
        """``qmd --index index <args>`` in the workspace with the per-agent environment.

        ``--index index`` names the default index explicitly, so a project-local ``.qmd/``
        folder above the workspace can never redirect it.
        """
        return run_qmd(self.q.command, ["--index", "index", *args], env=self.env,
                       cwd=self.workspace, timeout_ms=timeout_ms,
                       discard_stdout=discard_stdout)

    # ------------------------------------------------------------------ collections

    def list_collections(self) -> dict[str, dict[str, str]]:
        """``qmd collection list`` parsed (JSON or the text listing); ``{}`` when it fails."""
        try:
            res = self.run(["collection", "list", "--json"], self.q.command_timeout_ms)
        except QmdError:
            return {}
        return parse_collection_list(res.stdout)

    def ensure_collections(self) -> None:
        """Add missing collections; re-add one whose listed path or pattern differs."""
        existing = self.list_collections()
        for c in self.collections:
            listed = existing.get(c.name)
            if listed is not None and not self._should_rebind(c, listed):
                continue
            if listed is not None:
                self._remove_quietly(c.name)
            try:
                self._add(c)
            except QmdError as e:
                msg = str(e).lower()
                if "exists" in msg and f"collection '{c.name}'" in msg:
                    self._remove_quietly(c.name)
                    try:
                        self._add(c)
                        continue
                    except QmdError as e2:
                        e = e2
                self.warnings.append(f"qmd collection add failed for {c.name}: {e}")

    def _should_rebind(self, c: QmdCollection, listed: dict[str, str]) -> bool:
        path, pattern = listed.get("path"), listed.get("pattern")
        if path and os.path.normpath(path) != os.path.normpath(str(c.path)):
            return True
        return pattern is not None and pattern != c.pattern

    def _add(self, c: QmdCollection) -> None:
        if any(ch in c.pattern for ch in "*?["):
            try:  # the reference creates the folder of a glob collection
                c.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                self.warnings.append(f"{c.path}: {e.strerror or e}")
        flags = [self.pattern_flag] + [f for f in ("--mask", "--glob") if f != self.pattern_flag]
        for i, flag in enumerate(flags):
            try:
                self.run(["collection", "add", str(c.path), "--name", c.name, flag, c.pattern],
                         self.q.command_timeout_ms)
                self.pattern_flag = flag
                return
            except QmdError as e:
                if i == len(flags) - 1 or not _UNSUPPORTED_RE.search(str(e).lower()):
                    raise

    def _remove_quietly(self, name: str) -> None:
        try:
            self.run(["collection", "remove", name], self.q.command_timeout_ms)
        except QmdError as e:
            if not _MISSING_RE.search(str(e).lower()):
                self.warnings.append(f"qmd collection remove failed for {name}: {e}")

    def collection_names(self, sources: Sequence[str] | None = None) -> list[str]:
        return [c.name for c in self.collections if not sources or c.source in sources]

    # ------------------------------------------------------------------ sync

    def sync(self, *, force: bool = False, progress: SyncProgress | None = None,
             reason: str = "manual") -> dict[str, Any]:
        """``qmd update`` (then ``qmd embed`` in the vector modes); debounced unless forced.

        ``progress`` is accepted for the face's sake; qmd reports no progress to relay.
        """
        self.open()
        now = time.time()
        if (not force and self.q.debounce_ms > 0 and self.last_update_at is not None
                and (now - self.last_update_at) * 1000 < self.q.debounce_ms):
            return {"backend": "qmd", "updated": False,
                    "skipped": f"updated {now - self.last_update_at:.1f} s ago (debounce "
                               f"{self.q.debounce_ms} ms)"}
        t0 = time.perf_counter()
        exported = self.export_sessions()
        attempts = 3 if reason == "boot" else 1
        for attempt in range(1, attempts + 1):
            try:
                self.run(["update"], self.q.update_timeout_ms, discard_stdout=True)
                break
            except QmdError as e:
                msg = str(e).lower()
                retryable = "sqlite_busy" in msg or "database is locked" in msg or \
                    "timed out" in msg
                if attempt >= attempts or not retryable:
                    raise
                time.sleep(0.5 * 2 ** (attempt - 1))
        self.dirty = False
        report: dict[str, Any] = {"backend": "qmd", "updated": True, "reason": reason,
                                  "updateMs": round((time.perf_counter() - t0) * 1000)}
        if exported is not None:
            report["sessions"] = exported.to_json()
        if self._should_embed(force):
            missing = self.missing_models()
            if missing:  # said in full once; later updates only name it
                report["embedSkipped"] = ("models missing (see above)" if self._said_missing
                                          else self.models_missing_message(missing))
                self._said_missing = True
            else:
                try:
                    self.run(["embed"], self.q.embed_timeout_ms, discard_stdout=True)
                    self.last_embed_at = time.time()
                    self.embed_failures, self.embed_backoff_until = 0, None
                    report["embedded"] = True
                except QmdError as e:
                    self.embed_failures += 1
                    delay = min(3600.0, 60.0 * 2 ** (self.embed_failures - 1))
                    self.embed_backoff_until = time.time() + delay
                    report["embedError"] = f"{e}; backing off for {int(delay)}s"
        self.last_update_at = time.time()
        return report

    def export_sessions(self) -> ExportReport | None:
        """The transcripts as Markdown for the sessions collection (``None``: export is off)."""
        if self.sessions_dir is None:
            return None
        try:
            report = export_sessions(self.workspace, self.config, self.sessions_dir)
        except (ExportRefused, OSError) as e:
            raise QmdError(f"qmd session export failed: {e}") from e
        self.warnings.extend(w for w in report.warnings if w not in self.warnings)
        return report

    def _should_embed(self, force: bool) -> bool:
        if self.q.search_mode == "search":
            return False
        now = time.time()
        if self.embed_backoff_until is not None and now < self.embed_backoff_until:
            return False
        return (force or self.last_embed_at is None or
                (self.q.embed_interval_ms > 0
                 and (now - self.last_embed_at) * 1000 > self.q.embed_interval_ms))

    def missing_models(self, mode: str | None = None) -> list[str]:
        """The GGUF files ``mode`` (default: the configured one) needs and this machine lacks."""
        out = []
        for role in MODELS_FOR_MODE.get(mode or self.q.search_mode, ()):
            env_key, filename = MODEL_FILES[role]
            override = self.env.get(env_key, "")
            if override and not override.startswith("hf:"):
                if not Path(override).is_file():
                    out.append(override)
                continue
            name = override.rsplit("/", 1)[-1] if override else filename
            try:
                have = any(name in p.name for p in self.models_dir.iterdir() if p.is_file())
            except OSError:
                have = False
            if not have:
                out.append(name)
        return out

    def models_missing_message(self, missing: Sequence[str], mode: str | None = None) -> str:
        return (f"models missing: qmd {mode or self.q.search_mode} needs {', '.join(missing)} in "
                f"{self.models_dir} (qmd downloads them from huggingface.co, which this machine "
                "does not reach; `search` (BM25) needs no model)")

    # ------------------------------------------------------------------ search

    def search(self, query: str, *, max_results: int | None = None,
               min_score: float | None = None, sources: Sequence[str] | None = None,
               on_hits: OnHits | None = None, mode: str | None = None) -> BackendSearch:
        """The reference's ``QmdMemoryManager.search`` (see the module docstring)."""
        command = mode or self.q.search_mode
        trimmed, note = cap_query(query.strip())  # the library's one query cap
        if not trimmed:
            return BackendSearch([], "qmd", command)
        self.open()
        if self.q.on_boot and self.last_update_at is None:
            self.sync(reason="boot")
        elif self.dirty:
            self.sync(reason="search")
        limit = min(self.q.max_results, max_results or self.q.max_results)
        names = self.collection_names(sources)
        if not names:
            return BackendSearch([], "qmd", command)
        missing = self.missing_models(command)
        if missing:
            raise QmdError(self.models_missing_message(missing, command))
        try:
            entries = self._run_search(command, trimmed, limit, names)
        except QmdError as e:
            msg = str(e).lower()
            if not (_MISSING_RE.search(msg) and "collection" in msg):
                raise
            self.ensure_collections()  # a managed collection vanished: repair, retry once
            entries = self._run_search(command, trimmed, limit, names)
        hits = self._to_hits(entries, command, min_score or 0.0)
        if sources:
            hits = [h for h in hits if h.source in set(sources)]
        hits = clamp_injected(diversify_by_source(hits, limit), self.q.max_injected_chars)
        if on_hits is not None and hits:
            on_hits(trimmed, hits)
        return BackendSearch(hits, "qmd", command, None, None, note)

    def _run_search(self, command: str, query: str, limit: int, names: list[str]
                    ) -> list[dict[str, Any]]:
        groups = self._groups(names)
        if len(groups) == 1:
            return self._search_once(command, query, limit, groups[0])
        best: dict[str, dict[str, Any]] = {}
        for group in groups:
            for e in self._search_once(command, query, limit, group):
                key = e.get("docid") or f"file:{e.get('file')}"
                if key not in best or (e.get("score") or 0) > (best[key].get("score") or 0):
                    best[key] = e
        return sorted(best.values(), key=lambda e: -(e.get("score") or 0.0))

    def _search_once(self, command: str, query: str, limit: int, names: list[str]
                     ) -> list[dict[str, Any]]:
        args = [command, "--json", "-n", str(limit)]
        for n in names:
            args += ["-c", n]
        args += ["--", query]  # a query starting with "-" is never read as one of qmd's flags
        try:
            res = self.run(args, self.q.timeout_ms)
        except QmdError as e:
            if command == "query" or not _UNSUPPORTED_RE.search(str(e).lower()):
                raise
            args[0] = "query"  # the reference retries unsupported flags with `qmd query`
            res = self.run(args, self.q.timeout_ms)
        return parse_query_json(res.stdout, res.stderr)

    def _groups(self, names: list[str]) -> list[list[str]]:
        """One run per source when qmd takes several ``-c`` flags, else one per collection."""
        if len(names) <= 1:
            return [names]
        if self._multi_collection is None:
            try:
                res = self.run(["--help"], min(self.q.timeout_ms, 5000))
                text = res.stdout + "\n" + res.stderr
                self._multi_collection = bool(re.search(
                    r"\b(?:one or more collections|collection\(s\)|multiple -c flags)\b",
                    text, re.I))
            except QmdError:
                self._multi_collection = False
        if not self._multi_collection:
            return [[n] for n in names]
        groups: dict[str, list[str]] = {}
        for n in names:
            groups.setdefault(self.roots[n].source if n in self.roots else n, []).append(n)
        return list(groups.values())

    def _to_hits(self, entries: list[dict[str, Any]], command: str, min_score: float
                 ) -> list[Hit]:
        hits = []
        for e in entries:
            loc = self.locate(e.get("docid"), e.get("collection"), e.get("file"))
            if loc is None:
                continue
            rel, source = loc
            snippet = (e.get("snippet") or "")[: self.q.max_snippet_chars]
            start, end = snippet_lines(e, snippet)
            score = e["score"] if isinstance(e.get("score"), float) else 0.0
            if score < min_score:
                continue
            hits.append(Hit(id=(e.get("docid") or rel).lstrip("#"), path=rel, source=source,
                            start_line=start, end_line=end, score=score, snippet=snippet,
                            text_score=score if command == "search" else 0.0,
                            vector_score=score if command != "search" else 0.0,
                            via=f"qmd {command}"))
        return hits

    # ------------------------------------------------------------------ locations

    def _conn(self) -> sqlite.Connection:
        if self._db is None:
            if not self.index_path.exists():
                raise QmdError(f"qmd index {self.index_path} does not exist yet")
            self._db = connect(f"file:{self.index_path}?mode=ro", uri=True,
                               timeout=1.0, check_same_thread=False)
        return self._db

    def _rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn().execute(sql, args))
        except StoreLocked as e:
            raise QmdError(f"qmd index busy while reading results: {e}") from e
        except sqlite.Error as e:
            raise QmdError(f"qmd index unreadable: {e}") from e

    def locate(self, docid: str | None, collection: str | None, file: str | None
               ) -> tuple[str, str] | None:
        """(workspace path, source) of a result, from its docid (qmd's index) or its file."""
        hint_coll, hint_file = collection, file
        if file and file.lower().startswith("qmd://"):
            parts = urlsplit(file)
            hint_coll = unquote(parts.hostname or "") or collection
            hint_file = unquote(parts.path).lstrip("/") or None
        doc = (docid or "").strip().strip("\"'").lstrip("#")
        if doc:
            if not _DOCID_RE.fullmatch(doc):
                return None  # not a docid (qmd's isDocid: 6+ hex digits); never a pattern
            doc = doc.lower()
            rows = self._rows("SELECT collection, path FROM documents WHERE hash = ? AND "
                              "active = 1", doc)
            if not rows:
                rows = self._rows("SELECT collection, path FROM documents WHERE "
                                  "substr(hash, 1, ?) = ? AND active = 1", len(doc), doc)
            rows.sort(key=lambda r: (r[0] != hint_coll, r[1] != hint_file))
            for coll, path in rows:
                loc = self.to_location(coll, path)
                if loc:
                    return loc
            return None
        if hint_coll and hint_file:
            return self.to_location(hint_coll, hint_file)
        return None

    def to_location(self, collection: str, rel: str) -> tuple[str, str] | None:
        root = self.roots.get(collection)
        if root is None:
            return None
        rel = rel.replace("\\", "/")
        if rel.startswith("/") or "\x00" in rel or ".." in rel.split("/"):
            return None  # qmd's index names a file outside its collection: never cited
        abs_path = Path(os.path.normpath(root.path / rel))
        if not abs_path.is_relative_to(os.path.normpath(root.path)):
            return None
        # cited by collection: exports (as the reference's are), files outside the workspace,
        # and files under its qmd/ folder (their workspace path would read as a citation)
        if root.kind != "sessions" and abs_path.is_relative_to(self.workspace):
            ws_rel = abs_path.relative_to(self.workspace).as_posix()
            if ws_rel in ("", "."):
                return abs_path.name, root.source
            if not (ws_rel == "qmd" or ws_rel.startswith("qmd/")):
                return ws_rel, root.source
        return f"qmd/{collection}/{rel.lstrip('/')}", root.source

    # ------------------------------------------------------------------ reading

    def get(self, path: str, from_line: int | None = None, lines: int | None = None
            ) -> ReadResult:
        """``memory_get`` on a file qmd may cite (the reference's ``readFile`` rules)."""
        rel = (path or "").strip()
        if not rel:
            raise PathRefused("path required")
        real = self._read_path(rel)
        if not str(real).endswith(".md"):
            raise PathRefused("path required")
        if not rel.startswith("qmd/") and is_readable_memory_path(self.workspace, self.config,
                                                                   rel):
            return read_lines(self.workspace, self.config, rel, from_line, lines)
        if real.exists() and not real.is_file():
            raise PathRefused("path required")
        return read_file_slice(real, rel, from_line, lines)

    def _read_path(self, rel: str) -> Path:
        if rel.startswith("qmd/"):
            parts = rel.split("/")
            if len(parts) < 3 or not parts[1]:
                raise PathRefused("invalid qmd path")
            root = self.roots.get(parts[1])
            if root is None:
                raise PathRefused(f"unknown qmd collection: {parts[1]}")
            p = Path(os.path.realpath(root.path / "/".join(parts[2:])))
            if not p.is_relative_to(os.path.realpath(root.path)):
                raise PathRefused("qmd path escapes collection")
            return p
        p = Path(os.path.realpath(self.workspace / rel))
        if not p.is_relative_to(os.path.realpath(self.workspace)):
            raise PathRefused("path escapes workspace")
        ws_rel = p.relative_to(os.path.realpath(self.workspace)).as_posix()
        if not (ws_rel in _DEFAULT_MEMORY_NAMES or ws_rel.startswith("memory/")
                or self._indexed(p)):
            raise PathRefused("path required")
        return p

    def _indexed(self, abs_path: Path) -> bool:
        for c in self.collections:
            root = Path(os.path.realpath(c.path))
            if not abs_path.is_relative_to(root):
                continue
            try:
                if self._rows("SELECT 1 FROM documents WHERE collection = ? AND active = 1 AND "
                              "path = ?", c.name, abs_path.relative_to(root).as_posix()):
                    return True
            except QmdError:
                return False
        return False

    # ------------------------------------------------------------------ status and probes

    def version(self) -> str | None:
        """``qmd --version`` (``2.8.3``), asked once."""
        if self._version is None:
            try:
                res = run_qmd(self.q.command, ["--version"], env=self.env, cwd=self.workspace,
                              timeout_ms=min(self.q.timeout_ms, 5000))
                m = _VERSION_RE.search(res.stdout + res.stderr)
                self._version = m.group(1) if m else (res.stdout.strip() or "unknown")
            except QmdError:
                self._version = "unknown"
        return self._version

    def counts(self) -> dict[str, int]:
        """Active documents per collection (empty before the first index)."""
        try:
            return {str(c): int(n) for c, n in self._rows(
                "SELECT collection, COUNT(*) FROM documents WHERE active = 1 GROUP BY collection")}
        except QmdError:
            return {}

    def status(self, *, deep: bool = False) -> BackendStatus:
        counts = self.counts()
        by_source: dict[str, int] = {c.source: 0 for c in self.collections}
        for c in self.collections:
            by_source[c.source] = by_source.get(c.source, 0) + counts.get(c.name, 0)
        total = sum(by_source.values())
        vector_mode = self.q.search_mode != "search"
        missing = self.missing_models() if vector_mode else []
        cfg = self.config
        return BackendStatus(
            backend="qmd", workspace_dir=str(self.workspace), db_path=str(self.index_path),
            profile=cfg.profile, requested_provider="qmd", sources=sorted(by_source),
            extra_paths=[str(c.path) for c in self.collections if c.kind == "custom"],
            chunking=ChunkingInfo(0, 0, "document (qmd)"), warnings=list(self.warnings),
            indexed=self.index_path.exists(), files=total, chunks=total, dirty=self.dirty,
            source_counts=[SourceCount(s, n, n) for s, n in sorted(by_source.items())],
            provider="qmd", model="qmd", fts=FtsInfo(True, self.index_path.exists(), None),
            vector=VectorInfo(vector_mode, vector_mode and not missing,
                              self.models_missing_message(missing) if missing else None,
                              None, "qmd"),
            search_mode=self.q.search_mode, requested_backend="qmd",
            custom={"qmd": {
                "version": self.version(), "command": resolve_command(self.q.command),
                "searchMode": self.q.search_mode, "indexPath": str(self.index_path),
                "xdgConfigHome": str(self.xdg_config), "xdgCacheHome": str(self.xdg_cache),
                "collections": [dict(c.to_json(), files=counts.get(c.name, 0))
                                for c in self.collections],
                "lastUpdateAt": int(self.last_update_at * 1000) if self.last_update_at
                else None,
                "modelsMissing": missing,
                "limits": {"maxResults": self.q.max_results,
                           "maxSnippetChars": self.q.max_snippet_chars,
                           "maxInjectedChars": self.q.max_injected_chars,
                           "timeoutMs": self.q.timeout_ms}}},
        )

    def probe_vector(self) -> bool:
        """False in BM25 mode; otherwise whether the models are here and qmd reports vectors."""
        if self.q.search_mode == "search" or self.missing_models():
            return False
        try:
            res = self.run(["status"], min(self.q.timeout_ms, 5000))
        except QmdError:
            return False
        m = re.search(r"^\s*Vectors(?:\s*[:=]\s*|\s+)(\d+)\b", res.stdout + "\n" + res.stderr,
                      re.I | re.M)
        return bool(m and int(m.group(1)) > 0)

    def probe_embedding(self) -> dict[str, Any]:
        if self.probe_vector():
            return {"ok": True}
        missing = self.missing_models()
        return {"ok": False, "error": self.models_missing_message(missing) if missing
                else "QMD semantic vectors are unavailable"}
