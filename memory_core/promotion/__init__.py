"""Promotion ("dreaming"): diary facts the agent keeps recalling → ``MEMORY.md`` (spec §6).

The flow, as in OpenClaw 2026.5.20, one module per job:

1. **Signals** (§6.2, :mod:`.signals`). A search made with
   ``on_hits=recall_recorder(index)`` records its hits on short-term files (dated diaries) as
   *recalls*: count, score, query hash, day. Daily-note ingestion (:func:`ingest_daily`) records
   each diary snippet of the last days as a weaker *daily* signal, session-transcript
   ingestion (:func:`ingest_sessions`) each new transcript line. All land in the workspace's
   durable state store (:mod:`.state`, ``.memory/state.sqlite``), which no index rebuild
   touches and every index of the workspace shares. Concept tags: :mod:`.concepts`.
2. **Scoring** (§6.4, :mod:`.scoring`). :func:`list_candidates` scores every entry with the
   six weighted components and gates it; each :class:`PromotionCandidate` carries its breakdown
   and the reasons it was gated; :func:`explain` shows one entry's whole computation.
   The Light and REM phases (§6.3, :mod:`.phases`) stage reports under ``memory/dreaming/``
   (or in managed blocks of today's diary) and record phase hits that feed ``phaseBoost``.
3. **Applying** (§6.5). :func:`preview_apply` (:mod:`.plan`) re-locates each snippet in its
   diary, builds the section and compacts ``MEMORY.md`` to its budget (:mod:`.memory_file`, the
   file model); :func:`apply` (:mod:`.apply`) writes exactly that diff atomically under an OS
   file lock, keeps a backup, and records what :func:`undo` needs. This package is the only
   place the engine writes the user's Markdown.

Beyond the reference: a near-duplicate check (:mod:`.duplicates`), a retrieval impact preview
and a replay of a query log over simulated days (:mod:`.simulation`).

Every function that reads the clock takes ``now`` (an aware ``datetime`` or epoch milliseconds)
so that tests and demos are deterministic. Days are UTC calendar days.
"""

from __future__ import annotations

from .apply import ApplyResult, apply, promotion_lock, undo
from .diary import promoted_snippets, write_diary
from .dream import dream
from .duplicates import check_duplicates
from .memory_file import promoted_sections, relocate
from .model import (
    BUDGET_RESERVE_CHARS,
    DAILY_SIGNAL_SCORE,
    DEFAULT_LIMIT,
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MIN_RECALL_COUNT,
    DEFAULT_MIN_SCORE,
    DEFAULT_MIN_UNIQUE_QUERIES,
    MAX_CONCEPT_TAGS,
    MAX_QUERY_HASHES,
    MAX_RECALL_DAYS,
    MEMORY_FILE_MAX_CHARS,
    PROMOTIONS_DIR,
    WEIGHTS,
    PromotionError,
    RecallEntry,
    is_contaminated,
    is_short_term_path,
    iso,
    now_ms,
    query_hash,
)
from .phases import DreamingConfig, run_light, run_rem, run_sweep
from .plan import preview_apply
from .scoring import PromotionCandidate, explain, list_candidates, normalize_weights, score_entry
from .sessions import ingest_sessions
from .signals import (
    daily_snippets,
    ingest_daily,
    recall_recorder,
    record_search,
    record_tool_results,
    set_timezone,
)
from .simulation import ImpactReport, impact_preview, load_query_log, replay, replay_tool_results
from .stale import StaleLine, UpdatePlan, apply_update, preview_update, stale_lines
from .state import open_state, state_of, state_path

__all__ = [
    "BUDGET_RESERVE_CHARS",
    "DAILY_SIGNAL_SCORE",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MIN_RECALL_COUNT",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_MIN_UNIQUE_QUERIES",
    "MAX_CONCEPT_TAGS",
    "MAX_QUERY_HASHES",
    "MAX_RECALL_DAYS",
    "MEMORY_FILE_MAX_CHARS",
    "PROMOTIONS_DIR",
    "WEIGHTS",
    "ApplyResult",
    "DreamingConfig",
    "ImpactReport",
    "PromotionCandidate",
    "PromotionError",
    "RecallEntry",
    "StaleLine",
    "UpdatePlan",
    "apply",
    "apply_update",
    "check_duplicates",
    "daily_snippets",
    "dream",
    "explain",
    "impact_preview",
    "ingest_daily",
    "ingest_sessions",
    "is_contaminated",
    "is_short_term_path",
    "iso",
    "list_candidates",
    "load_query_log",
    "normalize_weights",
    "now_ms",
    "open_state",
    "preview_apply",
    "preview_update",
    "promoted_sections",
    "promoted_snippets",
    "promotion_lock",
    "query_hash",
    "recall_recorder",
    "record_search",
    "record_tool_results",
    "relocate",
    "replay",
    "replay_tool_results",
    "run_light",
    "run_rem",
    "run_sweep",
    "score_entry",
    "set_timezone",
    "stale_lines",
    "state_of",
    "state_path",
    "undo",
    "write_diary",
]
