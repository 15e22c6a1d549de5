"""Evaluation fanned out over a Ray cluster: one task per workspace, the same report.

A query set judged against several workspaces (LoCoMo's conversations, a BEIR corpus split
into shards, long-memory haystacks) is a set of independent jobs: each workspace has its own
index. :func:`run_eval_ray` sends one Ray task per workspace; the task opens that workspace's
:class:`~memory_core.index.MemoryIndex`, syncs it, fetches every query's candidates, fuses them
under every configuration and sends back only the per-query metric rows (and its share of the
leg audit). The driver concatenates the rows in the set's order and aggregates them with the
same code as the serial run (:func:`~memory_core.evaluation.runner.build_report`), so the
metrics are the same floats.

Ray is an optional extra (``pip install -e '.[ray]'``); it is imported only here, and only when
this executor is asked for. Without ``address`` Ray starts a private local cluster (two worker
CPUs, no dashboard, bound to 127.0.0.1, its session files in a temporary folder) and stops it
afterwards. With ``address`` (``ray://host:10001`` or ``host:6379``) it joins a running
cluster, whose nodes must have this package installed and see the workspaces, the evaluation
cache and the data at the same paths (a shared filesystem).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..base.config import SearchSettings
from ..base.ray_session import import_ray, ray_session
from .datasets import EvalQuery, QuerySet, load_query_set
from .report import EvalReport
from .runner import (
    EvalConfig,
    Progress,
    ScoredQueries,
    build_report,
    collect_workspace,
    eval_configs,
    queries_by_workspace,
    score_collected,
)


def evaluate_workspace(query_set: QuerySet, ws_key: str, queries: Sequence[EvalQuery],
                       configs: Sequence[EvalConfig], workspace: str | None, *,
                       profile: str | None, provider: str | None, chunk_tokens: int | None,
                       audit: bool) -> tuple[dict[str, Any], ScoredQueries]:
    """The body of one task: index one workspace, score its queries under every config.

    Returns the index's description and the per-query rows (no candidates, no index handle).
    Runs in a Ray worker, but is a plain function: it gives the same result in-process.
    """
    collected, info = collect_workspace(
        query_set, ws_key, queries, configs, index_or_workspace=workspace, profile=profile,
        provider=provider, chunk_tokens=chunk_tokens)
    return info, score_collected(collected, configs, audit)


def run_eval_ray(workspace: str | os.PathLike[str] | None, query_set: QuerySet | str,
                 settings: SearchSettings | Sequence[Any] | Mapping[str, SearchSettings] | None
                 = None, progress: Progress | None = None, *, profile: str | None = None,
                 provider: str | None = None, legs: bool = False, audit: bool = True,
                 limit: int | None = None, chunk_tokens: int | None = None,
                 address: str | None = None) -> EvalReport:
    """:func:`~memory_core.evaluation.runner.run_eval` with one Ray task per workspace.

    Same arguments, except that ``workspace`` is a folder (or None for the set's own
    workspaces), never an open index: each task opens its own. ``progress`` reports
    ``("workspaces", done, total)`` as tasks finish. Raises :class:`RayUnavailable` when Ray
    is not installed.
    """
    import_ray()  # RayUnavailable before any work
    qs = load_query_set(query_set) if isinstance(query_set, str) else query_set
    qs = qs.limited(limit)
    configs = eval_configs(settings, None, profile=profile, provider=provider, legs=legs)
    by_ws = queries_by_workspace(qs, workspace)
    target = os.fspath(workspace) if workspace is not None else None
    if not by_ws:  # nothing to send anywhere
        return build_report(qs, configs, [score_collected([], configs, audit)], {"indexes": {}})
    prog = progress or (lambda stage, done, total: None)
    with ray_session(address) as ray:
        task = ray.remote(num_cpus=1, max_retries=0)(evaluate_workspace)
        refs = {task.remote(qs, key, queries, configs, target, profile=profile,
                            provider=provider, chunk_tokens=chunk_tokens, audit=audit): key
                for key, queries in by_ws.items()}
        results: dict[str, tuple[dict[str, Any], ScoredQueries]] = {}
        pending = list(refs)
        prog("workspaces", 0, len(refs))
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                results[refs[done[0]]] = ray.get(done[0])
            except ray.exceptions.RayTaskError as e:
                # the task's own error (a bad label file, a missing workspace), not Ray's
                # traceback-laden wrapper: the CLI prints it as one line
                cause = getattr(e, "cause", None)
                raise (cause if isinstance(cause, Exception) else e) from None
            prog("workspaces", len(results), len(refs))
    info = {"indexes": {key or "workspace": results[key][0] for key in by_ws},
            "executor": "ray"}
    return build_report(qs, configs, [results[key][1] for key in by_ws], info)
