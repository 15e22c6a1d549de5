"""Retrieval evaluation: labelled queries → the protocol's metrics, per configuration and per leg.

The evaluator measures what the agent would receive. One module per job:

* :mod:`.datasets`: query sets (the demo, LoCoMo, BEIR, a ``.jsonl`` file) and where they live;
  :func:`same_workspace` tells whether an open workspace is the one a set is labelled against;
* :mod:`.metrics`: Recall@k, Success@k, MRR@10, nDCG@10 at chunk and file level, and averages;
* :mod:`.runner`: configurations, one candidate fetch per query, :func:`run_eval`, :func:`sweep`
  and the leg audit;
* :mod:`.report`: :class:`EvalReport` (Markdown, JSON), sweep tables, :func:`compare`;
* :mod:`.cv`: cross-validation (:func:`run_cv`, :func:`cross_validate`): constants chosen on
  training folds, figures from held-out ones (leave one conversation out on LoCoMo).
* :mod:`.trec`: TREC run and qrels files, BEIR qrels TSV, TREC topics (the field's formats);
* :mod:`.run_metrics`: the field's metrics of a TREC run against qrels (``ranx``'s definitions);
* :mod:`.significance`: the paired bootstrap interval and the paired randomization test;
* :mod:`.run_compare`: run A vs run B (``eval compare``): per-metric delta, interval, p-value,
  wins, losses and regression flags;
* :mod:`.runs`: saved runs (TREC file + settings, dataset, index, code version, metrics);
* :mod:`.labels`: your own labels, kept as qrels beside a workspace's index.

Public API (used by the CLI's ``eval`` command, the workbench's Evaluate page and the notebooks):

* :func:`available_query_sets` and :func:`load_query_set` → :class:`QuerySet`;
* :func:`run_eval` → :class:`EvalReport` (``.metrics``, ``.per_query``, ``.audit``,
  ``.to_markdown()``, ``.to_json()``);
* :func:`sweep` → a tidy list of dicts (one per setting combination) for a heatmap;
* :func:`compare` → the per-query wins and losses between two reports.
* :func:`~.runs.save_run`, :func:`~.runs.list_runs`, :func:`~.runs.compare_saved` (saved runs)
  and :func:`~.run_compare.compare_runs` (two TREC runs and qrels) → a
  :class:`~.run_compare.Comparison`.

The data under ``../shared/datasets`` is licensed for evaluation only: it is read in place, never
copied into the project; generated workspaces and indexes live in a cache folder outside it
(``$MEMORY_WORKBENCH_CACHE`` or ``~/.cache/memory-workbench``, see :func:`.datasets.cache_dir`).
"""

from ..base.locations import datasets_dir
from . import datasets as _datasets
from .cv import cross_validate, cross_validate_sets, make_folds, run_cv
from .datasets import (
    BEIR_SETS,
    DEMO_WORKSPACE,
    DatasetMissing,
    EvalQuery,
    Evidence,
    QuerySet,
    available_query_sets,
    load_query_set,
    same_workspace,
)
from .longmemeval import load_longmemeval
from .metrics import max_new_unit_sequence, score_ranking
from .report import EvalReport, compare, compare_markdown, sweep_markdown
from .runner import (
    DEFAULT_GRID,
    CollectedQuery,
    EvalConfig,
    collect,
    leg_audit,
    leg_configs,
    run_eval,
    sweep,
)

__all__ = [
    "BEIR_SETS",
    "DEFAULT_GRID",
    "DEMO_WORKSPACE",
    "CollectedQuery",
    "DatasetMissing",
    "EvalConfig",
    "EvalQuery",
    "EvalReport",
    "Evidence",
    "QuerySet",
    "available_query_sets",
    "collect",
    "compare",
    "compare_markdown",
    "cross_validate",
    "cross_validate_sets",
    "datasets_dir",
    "leg_audit",
    "leg_configs",
    "load_query_set",
    "make_folds",
    "max_new_unit_sequence",
    "run_cv",
    "run_eval",
    "same_workspace",
    "score_ranking",
    "sweep",
    "sweep_markdown",
]

# datasets.load_query_set("longmemeval-s…") answers through the loader that builds its QuerySet
# in a module of its own (which imports datasets, so datasets cannot import it)
_datasets.NAMED_LOADERS["longmemeval-s"] = load_longmemeval
