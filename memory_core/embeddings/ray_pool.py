"""Embedding on Ray: a sync's texts embedded by a pool of Ray actors while this process writes.

``memory-core index --executor ray`` hands :class:`RayEmbedPool` to the sync
(:class:`memory_core.write.sync.EmbedExecutor`). The sync plans every group of texts it will embed
(each group exactly the list the serial path passes to ``embed_documents``); the pool turns the
plan into a Ray Dataset, one row per group, and runs ``map_batches`` over it with an actor pool:
each actor starts the provider once (the local model is loaded once per actor, not per batch)
and embeds whole groups. The driver iterates the results in plan order (Ray Data's
``preserve_order``) and the sync writes each group as it arrives, so SQLite keeps one writer
and the vectors are the serial path's: same provider, same inputs, same batches.

An actor that dies (killed, out of memory, its node lost) is restarted and its group retried,
up to :data:`RETRIES` times; an embedding error of the provider itself is raised as it would be
serially (:class:`~.base.EmbeddingError`), so the fallback chain still applies.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, redirect_stdout
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.config import ProviderConfig
from ..base.ray_session import LOCAL_CPUS, RayUnavailable, ray_session
from .base import EmbeddingError, EmbeddingProvider
from .windows import embed_whole

if TYPE_CHECKING:
    from . import ProviderChoice

#: Restarts of a dead actor, and retries of the group it held, before the sync fails.
RETRIES = 3


class GroupEmbedder:
    """The body of one actor: the provider started once, then one group embedded per row.

    A plain class (Ray Data instantiates it in each actor); it gives the same vectors
    in-process.
    """

    def __init__(self, name: str, cfg: ProviderConfig, provider_key: str, whole: bool) -> None:
        from . import build_provider

        provider = build_provider(name, cfg)
        # batch mode submits jobs to a batch API; an actor embeds its group online instead
        provider = getattr(provider, "inner", provider)
        if provider is None or provider.provider_key != provider_key:
            raise EmbeddingError(f"ray worker: provider {name!r} does not start as it does "
                                 "here (another model or settings on the worker)")
        self.provider: EmbeddingProvider = provider
        self.whole = whole

    def embed(self, texts: list[str]) -> np.ndarray:
        """One group's vectors, as the serial sync computes them."""
        if self.whole:
            return embed_whole(self.provider, texts)
        return self.provider.embed_documents(texts)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        blobs = [np.ascontiguousarray(self.embed([str(t) for t in texts]),
                                      dtype=np.float32).tobytes() for texts in batch["texts"]]
        return {"group": batch["group"], "vectors": np.array(blobs, dtype=object)}


def provider_name(choice: ProviderChoice, cfg: ProviderConfig) -> str:
    """The name :func:`~memory_core.embeddings.build_provider` starts ``choice``'s provider by:
    the configured one, or the fallback's (started with its own defaults, as here)."""
    if choice.provider is None:
        raise EmbeddingError("ray executor: no embedding provider to run (keyword-only)")
    if choice.fallback_from or cfg.provider == "auto":
        return choice.provider.id
    return cfg.provider


def _first_line(e: object) -> str:
    """Ray's message without the log tail some of its errors carry (20 lines of raylet log)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class RayEmbedStream:
    """The groups' vectors as the actors finish them, handed out in plan order."""

    def __init__(self, ray: Any, rows: Iterator[dict[str, Any]], groups: list[list[str]],
                 progress: Callable[[int, int], None], session: ExitStack) -> None:
        self._ray = ray
        self._rows = rows
        self._groups = groups
        self._progress = progress
        self._session = session
        self._next = 0
        self._done = 0
        self._total = sum(len(g) for g in groups)
        progress(0, self._total)

    def take(self, texts: Sequence[str]) -> np.ndarray:
        """The next group's vectors; ``texts`` must be the group planned next."""
        i = self._next
        if i >= len(self._groups) or list(texts) != self._groups[i]:
            raise EmbeddingError(f"ray executor: the sync asked for group {i} out of plan")
        try:
            row = next(self._rows)
        except StopIteration:
            raise EmbeddingError("ray executor: the pool returned fewer groups than planned"
                                 ) from None
        except self._ray.exceptions.RayError as e:  # a task's error, or the raylet gone
            cause = getattr(e, "cause", None)
            if isinstance(cause, EmbeddingError):
                raise cause from None
            raise EmbeddingError(f"ray executor: {type(e).__name__}: "
                                 f"{_first_line(cause or e)}") from None
        if int(row["group"]) != i:
            raise EmbeddingError(f"ray executor: got group {row['group']}, expected {i}")
        mat = np.frombuffer(row["vectors"], dtype=np.float32).reshape(len(texts), -1)
        self._next += 1
        self._done += len(texts)
        self._progress(self._done, self._total)
        return mat.copy()

    def close(self) -> None:
        """Stop the pipeline (and the local Ray this stream started)."""
        self._rows = iter(())
        self._session.close()


class RayEmbedPool:
    """``index --executor ray``: an actor pool per sync, on a local Ray or a cluster.

    ``actors``: the pool's size (default: the cluster's CPUs, 2 for the local Ray); each actor
    takes ``cpus_per_actor`` CPUs. ``address``: a running cluster (its nodes need this package
    and, for the local model, the model package); without it a private local Ray is started
    for the sync and stopped afterwards.
    """

    def __init__(self, cfg: ProviderConfig, *, address: str | None = None,
                 actors: int | None = None, cpus_per_actor: float = 1.0) -> None:
        if actors is not None and actors < 1:
            raise ValueError("--actors must be at least 1")
        self.cfg = cfg
        self.address = address
        self.actors = actors
        self.cpus_per_actor = cpus_per_actor

    def start(self, choice: ProviderChoice, groups: list[list[str]], whole: bool,
              progress: Callable[[int, int], None]) -> RayEmbedStream:
        """Start embedding ``groups`` (the sync's plan) and return their stream."""
        name = provider_name(choice, self.cfg)
        key = choice.key
        session = ExitStack()
        try:
            # Ray prints a dead worker's notice on stdout: stderr keeps ``--json`` parseable
            session.enter_context(redirect_stdout(sys.stderr))
            ray = session.enter_context(ray_session(self.address))
            rows = self._pipeline(ray, (name, self.cfg, key, whole), groups) if groups \
                else iter(())
        except BaseException as e:
            session.close()
            if isinstance(e, Exception) and not isinstance(e, (EmbeddingError, RayUnavailable)):
                # "the node timed out during startup", a dead raylet: one line, not Ray's
                raise EmbeddingError(f"ray executor: Ray did not start: {_first_line(e)}"
                                     ) from e
            raise
        return RayEmbedStream(ray, rows, groups, progress, session)

    def pool_size(self, ray: Any, groups: int) -> int:
        """Actors to start: as asked, else one per CPU of the cluster; never more than groups."""
        n = self.actors
        if n is None:
            cpus = float(ray.cluster_resources().get("CPU", LOCAL_CPUS))
            n = max(1, int(cpus // self.cpus_per_actor))
        return max(1, min(n, groups))

    def _pipeline(self, ray: Any, embedder_args: tuple[Any, ...], groups: list[list[str]]
                  ) -> Iterator[dict[str, Any]]:
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # no per-dataset INFO lines
        # Ray Data's own config (applied at its first run) would log a failed dataset's
        # traceback (a raylet killed): the error reaches the sync as one EmbeddingError
        os.environ.setdefault("RAY_DATA_LOG_LEVEL", "CRITICAL")
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True  # the writer takes groups in plan order
        ctx.enable_progress_bars = False  # the sync reports its own progress
        ctx.print_on_execution_start = False
        ds = ray.data.from_items([{"group": i, "texts": g} for i, g in enumerate(groups)],
                                 override_num_blocks=len(groups))
        out = ds.map_batches(
            GroupEmbedder, fn_constructor_args=embedder_args, batch_size=1,
            batch_format="numpy", compute=ray.data.ActorPoolStrategy(
                size=self.pool_size(ray, len(groups))),
            num_cpus=self.cpus_per_actor, max_restarts=RETRIES, max_task_retries=RETRIES)
        return iter(out.iter_rows())
