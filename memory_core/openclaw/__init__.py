"""OpenClaw homes: an agent's own workspace, settings, transcripts and real queries (issue #12).

* :mod:`.home`: :func:`open_home` resolves an agent of a home (``openclaw.json``, workspace,
  ``agents/<id>/sessions``) and opens its index with the home's settings, each with provenance;
* :mod:`.config`: ``openclaw.json`` (JSON5) and the mapping of ``agents.defaults.memorySearch``
  (2026.5) / ``memory.search`` (2026.8+) to :class:`memory_core.base.config.MemoryConfig`;
* :mod:`.queries`: the agent's ``memory_search`` calls paired with their results;
* :mod:`.realq`: those queries run again (then vs now) and label-free metrics over them;
* :mod:`.export`: tuned settings written back into ``openclaw.json`` (smallest change, backup).

A feature package above :class:`memory_core.MemoryIndex`: the engine never imports it.
"""

from .config import OpenClawConfigError, read_openclaw_json
from .export import ExportPlan, apply_export, plan_export
from .home import OpenClawHome, OpenClawHomeError, SettingRow, is_openclaw_home, open_home
from .queries import (
    RealQuery,
    mine_queries,
    mine_transcript,
    transcripts_of_home,
    transcripts_of_workspace,
    zero_result_rate,
)
from .realq import (
    LabelFreeMetrics,
    QueryComparison,
    compare,
    metrics,
    metrics_rows,
    overlap_at_k,
)

__all__ = [
    "ExportPlan",
    "LabelFreeMetrics",
    "OpenClawConfigError",
    "OpenClawHome",
    "OpenClawHomeError",
    "QueryComparison",
    "RealQuery",
    "SettingRow",
    "apply_export",
    "compare",
    "is_openclaw_home",
    "metrics",
    "metrics_rows",
    "mine_queries",
    "mine_transcript",
    "open_home",
    "overlap_at_k",
    "plan_export",
    "read_openclaw_json",
    "transcripts_of_home",
    "transcripts_of_workspace",
    "zero_result_rate",
]
