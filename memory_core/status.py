"""``Status``: what :meth:`MemoryIndex.status` reports, typed.

Readers (the workbench's home page, the CLI, the evaluator) use the snake_case attributes.
:meth:`Status.to_json` gives the reference's camelCase shape (``workspaceDir``, ``dbPath``,
``sourceCounts``, ``badJsonlLines``…), which ``memory-core status --json`` prints and scripts
read; its keys must not change.

Groups that only exist once an index has been read (provider, cache, FTS, vector…) are ``None``
before that, and are then left out of the JSON, as the untyped dict of earlier versions did.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .base.text import CJK_RUN_RE

if TYPE_CHECKING:
    from .base.config import MemoryConfig
    from .embeddings.base import EmbeddingProvider
    from .storage.store import FileRow, SkippedRow, Store
    from .write.sources import SourceFile

#: Embedding models that read English only (the ``local`` provider's default): with them the
#: vector leg of a Chinese, Japanese or Korean workspace is noise (XQuAD zh: S@5 0.29 for
#: MiniLM's leg against 0.985 for multilingual-e5-small's, docs/retrieval.md).
ENGLISH_ONLY_MODELS = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
#: A chunk counts as CJK when at least this share of its letters and digits are CJK characters
#: (a CJK word is one to two characters, an English one about five: a third of the characters
#: is about half of the words).
CJK_CHUNK_SHARE = 1 / 3
#: Status warns when more than this share of the (sampled) chunks are CJK.
CJK_WORKSPACE_SHARE = 0.5


def cjk_chunk_share(texts: Iterable[str]) -> tuple[float, int]:
    """Share of ``texts`` written mostly in a CJK script, and how many texts had any letter."""
    n = cjk = 0
    for text in texts:
        letters = sum(1 for ch in text if ch.isalnum())
        if not letters:
            continue
        n += 1
        runs = sum(len(m) for m in CJK_RUN_RE.findall(text))
        if runs >= CJK_CHUNK_SHARE * letters:
            cjk += 1
    return (cjk / n if n else 0.0), n


def multilingual_warning(provider: str | None, model: str | None,
                         texts: Iterable[str]) -> str | None:
    """A warning when most chunks are CJK and the embedding model reads English only."""
    if provider != "local" or (model or "") not in ENGLISH_ONLY_MODELS:
        return None
    share, n = cjk_chunk_share(texts)
    if n == 0 or share <= CJK_WORKSPACE_SHARE:
        return None
    return (f"{share:.0%} of the chunks are Chinese, Japanese or Korean, but the embedding "
            f"model {model} reads English only: its vector leg is noise here. Set "
            '[provider] provider = "e5" (multilingual-e5-small, bundled) in '
            "memory-workbench.toml, or pass --provider e5 (the keyword leg's CJK bigrams work "
            "either way)")


class CamelJson:
    """A dataclass whose JSON is its fields in order, under their camelCase names."""

    def to_json(self) -> dict[str, Any]:
        return {re.sub(r"_(\w)", lambda m: m.group(1).upper(), f.name): getattr(self, f.name)
                for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class ChunkingInfo(CamelJson):
    """The chunking the configuration asks for."""

    tokens: int
    overlap: int
    mode: str


@dataclass(frozen=True)
class SourceCount(CamelJson):
    """Files and chunks indexed for one source (``memory``, ``sessions``)."""

    source: str
    files: int
    chunks: int


@dataclass(frozen=True)
class IdentityInfo(CamelJson):
    """Whether the index on disk was built with the settings in force.

    ``status`` is ``valid``, ``mismatch`` (a sync rebuilds it; ``reason`` says what changed) or
    ``missing`` (no index yet).
    """

    status: str
    reason: str | None = None


@dataclass(frozen=True)
class CacheInfo(CamelJson):
    """The embedding cache."""

    enabled: bool
    entries: int
    max_entries: int | None


@dataclass(frozen=True)
class FtsInfo(CamelJson):
    """The keyword leg (SQLite FTS5)."""

    enabled: bool
    available: bool
    error: str | None
    #: A fresh keyword postings sidecar answers the default profile's OR query (same floats).
    postings: bool = False


@dataclass(frozen=True)
class VectorInfo(CamelJson):
    """The vector leg: whether there are embeddings, and how they are searched."""

    enabled: bool
    store_available: bool
    load_error: str | None
    dims: int | None
    search: str  # "sidecar" (the mapped matrix), "sqlite-vec" or "numpy"
    rows: int | None = None  # rows in the sidecar
    blocks: int = 0  # block vectors stored (the best-block score of the first hits)

    def describe_search(self) -> str:
        """How a query's vector leg is answered, in words (``status``)."""
        how = (f"{self.search} search" if self.search != "sidecar"
               else f"exact sidecar search over {self.rows or 0:,} rows")
        return how + (f", {self.blocks:,} block vectors" if self.blocks else "")


@dataclass(frozen=True)
class FallbackInfo:
    """The embedding provider fell back from ``from_provider`` for ``reason``."""

    from_provider: str
    reason: str

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> FallbackInfo | None:
        """From the ``{"from", "reason"}`` form kept in the index meta (``None`` stays)."""
        if not d:
            return None
        return cls(str(d.get("from") or ""), str(d.get("reason") or ""))

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_provider, "reason": self.reason}


@dataclass(frozen=True)
class TruncationInfo(CamelJson):
    """Share of chunks the model does not read whole, and how many it reads in windows."""

    available: bool
    max_seq_length: int | None = None
    chunks: int = 0
    truncated: int = 0
    share: float = 0.0
    mean_tokens: float = 0.0
    windowed: int = 0

    def to_json(self) -> dict[str, Any]:
        return super().to_json() if self.available else {"available": False}


@dataclass(frozen=True)
class Status:
    """One workspace index at a glance.

    ``generation`` grows by one with every committed sync that changed the index (0: no index);
    ``last_sync_at`` is when that sync happened (epoch ms). ``last_sync`` is the report of this
    process's last sync (``SyncReport.to_dict()``), when it ran one.
    """

    backend: str
    workspace_dir: str
    db_path: str
    profile: str
    requested_provider: str
    sources: list[str]
    extra_paths: list[str]
    chunking: ChunkingInfo
    warnings: list[str] = field(default_factory=list)
    indexed: bool = False
    files: int = 0
    chunks: int = 0
    dirty: bool = True
    source_counts: list[SourceCount] = field(default_factory=list)
    identity: IdentityInfo | None = None
    error: str | None = None
    generation: int = 0
    last_sync_at: int | None = None
    # Known once the index has been read:
    provider: str | None = None
    model: str | None = None
    cache: CacheInfo | None = None
    fts: FtsInfo | None = None
    vector: VectorInfo | None = None
    fallback: FallbackInfo | None = None
    search_mode: str | None = None  # "hybrid" or "fts-only"
    bad_jsonl_lines: int = 0
    file_warnings: dict[str, str] = field(default_factory=dict)
    #: Files left out because they could not be read (or their name is not UTF-8).
    skipped_files: int = 0
    built_at: int | None = None
    last_sync: dict[str, Any] | None = None
    truncation: TruncationInfo | None = None
    #: The provider's batch mode (the reference's ``status().batch``), once the index was read.
    batch: dict[str, Any] | None = None
    #: Why no embedding provider could start, or which ones ``auto`` skipped and why (the
    #: reference's ``custom.providerUnavailableReason``).
    provider_unavailable_reason: str | None = None
    #: What a search's ``score`` means under the settings in force, and when it abstains.
    scores: dict[str, Any] | None = None
    #: Memory lines a later line superseded (``memory_core.base.supersession``), and those of them
    #: in ``MEMORY.md`` (stale long-term memory: line → the newer line's citation).
    superseded: int = 0
    stale_memory: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The reference's camelCase shape (the keys of ``memory-core status --json``)."""
        out: dict[str, Any] = {
            "backend": self.backend, "workspaceDir": self.workspace_dir, "dbPath": self.db_path,
            "profile": self.profile, "requestedProvider": self.requested_provider,
            "sources": list(self.sources), "extraPaths": list(self.extra_paths),
            "chunking": self.chunking.to_json(), "warnings": list(self.warnings),
            "indexed": self.indexed, "files": self.files, "chunks": self.chunks,
            "dirty": self.dirty, "sourceCounts": [c.to_json() for c in self.source_counts],
            "generation": self.generation, "lastSyncAt": self.last_sync_at,
        }
        if self.identity is not None:
            out["identity"] = self.identity.to_json()
        if self.error is not None:
            out["error"] = self.error
        if self.fts is not None:  # the index was read: its groups are known
            out.update(
                provider=self.provider, model=self.model,
                cache=self.cache.to_json() if self.cache else None,
                fts=self.fts.to_json(),
                vector=self.vector.to_json() if self.vector else None,
                fallback=self.fallback.to_json() if self.fallback else None,
                custom={"searchMode": self.search_mode, **(
                    {"providerUnavailableReason": self.provider_unavailable_reason}
                    if self.provider_unavailable_reason else {})},
                badJsonlLines=self.bad_jsonl_lines, fileWarnings=dict(self.file_warnings),
                skippedFiles=self.skipped_files,
                builtAt=self.built_at,
                superseded=self.superseded,
                staleMemory=[{"line": n, "supersededBy": c}
                             for n, c in sorted(self.stale_memory.items())],
            )
            if self.batch is not None:
                out["batch"] = dict(self.batch)
        if self.last_sync is not None:
            out["lastSync"] = self.last_sync
        if self.truncation is not None:
            out["truncation"] = self.truncation.to_json()
        if self.scores is not None:
            out["scores"] = dict(self.scores)
        return out


# ------------------------------------------------------------------ what status reads


def truncation_of(config: MemoryConfig, provider: EmbeddingProvider | None,
                  texts: Callable[[], list[str]]) -> TruncationInfo:
    """Share of the chunks ``texts()`` the model does not read whole. A provider that declares
    an input limit has longer chunks embedded in windows (``windowed``): only a window that
    still exceeds the limit (an unbreakable run) counts as truncated. ``texts`` is called only
    when the provider can count tokens (every chunk of the index: not read for nothing)."""
    from .base.lazy import numpy as np
    from .embeddings.windows import windowed_share
    from .write.sync import embeds_whole

    counter = getattr(provider, "token_counts", None)
    limit = getattr(provider, "max_seq_length", None)
    if counter is None or not limit:
        return TruncationInfo(False)
    chunks = texts()
    counts: list[int] = []
    for i in range(0, len(chunks), 256):
        counts.extend(counter(chunks[i : i + 256]))
    over = sum(1 for n in counts if n > limit)
    windowed = 0
    if embeds_whole(config, provider):
        windowed, over = windowed_share(provider, chunks)
    return TruncationInfo(True, int(limit), len(counts), over,
                          (over / len(counts)) if counts else 0.0,
                          float(np.mean(counts)) if counts else 0.0, windowed)


def sample_texts(store: Store, paths: Sequence[str], files: int = 24, per_file: int = 4
                 ) -> list[str]:
    """A few chunks of files spread over the index: enough to tell its main script, and cheap
    on any index size (status is called often)."""
    if not paths:
        return []
    step = max(1, len(paths) // files)
    out: list[str] = []
    for path in sorted(paths)[::step][:files]:
        out.extend(r.text for r in store.chunks_for_path(path)[:per_file])
    return out


def is_dirty(files: Sequence[SourceFile], rows: dict[str, FileRow],
             skipped: dict[str, SkippedRow]) -> bool:
    """True when the listing and the index disagree: a file added, removed or changed.

    A file the last sync skipped (binary, unreadable) counts as in line while its stat is
    the one recorded: otherwise one such file kept the workspace "dirty" forever.
    """
    if {f.path for f in files} != set(rows) | set(skipped):
        return True
    for f in files:
        r = rows.get(f.path)
        if r is not None:
            if (f.mtime_ms, f.size) != (r.mtime, r.size):
                return True
            continue
        k = skipped[f.path]
        if (f.mtime_ms, f.size, f.ctime_ms) != (k.mtime, k.size, k.ctime):
            return True
    return False
