"""qmd's update cadence for the long-running faces (``watch``, ``mcp``): the reference's timers.

``QmdMemoryManager`` (2026.5.20) runs ``qmd update`` at boot (``update.onBoot``, forced), every
``update.intervalMs`` (5 min), ``debounceMs`` (15 s) after the files change, and an
embed-interval update (``update.embedIntervalMs``, 60 min) when that interval is the shorter
one or the update timer is off; an update runs ``qmd embed`` when the embed interval has
passed. :class:`QmdTimers` does the same on one background thread, through the backend's own
``update`` (so the fallback to builtin, the debounce and the locks are the backend's), and keeps
a short log of what ran for the faces to print.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.config import QmdConfig

#: Called after each timed update with what happened.
OnUpdate = Callable[["TimerEvent"], None]


@dataclass(frozen=True)
class TimerEvent:
    """One timed update: why it ran, what the backend reported or the error."""

    reason: str  # "boot", "interval", "embed-interval" or "watch"
    ok: bool
    report: Any = None
    error: str | None = None
    at: float = 0.0


class QmdTimers:
    """Runs ``backend.update(force=..., reason=...)`` on the reference's schedule.

    ``backend`` is a :class:`~memory_core.backends.fallback.FallbackBackend` (or anything with
    that ``update``). :meth:`poke` says the files changed: an update follows ``debounce_ms``
    after the last poke. Nothing runs before :meth:`start`; :meth:`stop` ends the thread.
    """

    def __init__(self, backend: Any, cfg: QmdConfig, on_update: OnUpdate | None = None) -> None:
        self.backend = backend
        self.cfg = cfg
        self.on_update = on_update
        self._wake = threading.Condition()
        self._stopped = False
        self._poked_at: float | None = None
        self._thread: threading.Thread | None = None
        self.events: list[TimerEvent] = []

    def start(self) -> QmdTimers:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="qmd-timers", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def poke(self) -> None:
        """The files changed: update ``debounce_ms`` from now (a later poke moves it again)."""
        with self._wake:
            self._poked_at = time.monotonic()
            self._wake.notify_all()

    def embed_timer_scheduled(self) -> bool:
        """The reference's ``shouldScheduleEmbedTimer``."""
        embed, update = self.cfg.embed_interval_ms, self.cfg.update_interval_ms
        return embed > 0 and (update <= 0 or update > embed)

    # ----------------------------------------------------------------------------- the loop

    def _loop(self) -> None:
        now = time.monotonic()
        if self.cfg.on_boot:
            self._run("boot", force=True)
        update_s = self.cfg.update_interval_ms / 1000.0
        embed_s = self.cfg.embed_interval_ms / 1000.0
        next_update = now + update_s if update_s > 0 else math.inf
        next_embed = now + embed_s if self.embed_timer_scheduled() else math.inf
        while True:
            with self._wake:
                if self._stopped:
                    return
                poked = (self._poked_at + self.cfg.debounce_ms / 1000.0
                         if self._poked_at is not None else math.inf)
                due = min(next_update, next_embed, poked)
                now = time.monotonic()
                if due > now:
                    self._wake.wait(None if due == math.inf else due - now)
                    continue
                if due == poked:
                    self._poked_at = None
            if due == poked:
                self._run("watch", force=False)
            elif due == next_update:
                next_update += update_s
                self._run("interval", force=False)
            else:
                next_embed += embed_s
                self._run("embed-interval", force=False)

    def _run(self, reason: str, *, force: bool) -> None:
        try:
            report = self.backend.update(force=force, reason=reason)
            event = TimerEvent(reason, True, report, at=time.time())
        except Exception as e:  # a timer never dies: the next tick tries again
            event = TimerEvent(reason, False, error=f"{type(e).__name__}: {e}", at=time.time())
        self.events.append(event)
        del self.events[:-100]
        if self.on_update is not None:
            try:
                self.on_update(event)
            except Exception:  # a printing callback must not stop the timers
                pass
