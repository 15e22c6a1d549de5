"""``memory-core watch``: follow the workspace and keep its index current, without MCP.

For people who use the CLI and the workbench: leave it running and every ``search`` (and the
workbench, which polls the index generation) sees changes within seconds. One line per sync.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

from .common import add_backend_arg, add_workspace_args, open_backend_for, open_index


def register(sub: Any) -> None:
    p = sub.add_parser("watch", help="follow the files and sync the index as they change",
                       description="Sync now, then follow MEMORY.md, memory/, the extra paths "
                       "and the transcripts; print a line per sync. With --backend qmd, qmd's "
                       "update timers run too ([qmd] on_boot, update_interval_ms, debounce_ms, "
                       "embed_interval_ms). Ctrl-C stops.")
    add_workspace_args(p)
    add_backend_arg(p)
    p.add_argument("--once", action="store_true",
                   help="sync once (waiting its turn behind another sync) and exit")
    p.set_defaults(func=cmd_watch)


def _line(ev: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps({"reason": ev.reason, "error": ev.error,
                           "durationMs": round(ev.duration_ms, 1), "generation": ev.generation,
                           "report": ev.report.to_dict() if ev.report else None},
                          ensure_ascii=False)
    stamp = time.strftime("%H:%M:%S")
    if ev.error:
        return f"{stamp} sync ({ev.reason}) failed: {ev.error}"
    r = ev.report
    what = (f"{r.files_indexed} indexed, {r.files_deleted} deleted, "
            f"{r.chunks_written} chunks" if r.wrote_anything else "nothing changed")
    kind = f"rebuild ({r.reason})" if r.full else "sync"
    return (f"{stamp} {kind} ({ev.reason}): {what}; {ev.duration_ms:.0f} ms; "
            f"generation {ev.generation}")


def _qmd_line(ev: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps({"qmd": ev.reason, "ok": ev.ok, "error": ev.error,
                           "report": ev.report}, ensure_ascii=False, default=str)
    stamp = time.strftime("%H:%M:%S")
    if not ev.ok:
        return f"{stamp} qmd update ({ev.reason}) failed: {ev.error}"
    if not isinstance(ev.report, dict):  # no qmd report: the builtin index answers now
        return f"{stamp} qmd update ({ev.reason}): builtin answers (qmd fell back)"
    r = ev.report
    if not r.get("updated"):
        return f"{stamp} qmd update ({ev.reason}): skipped, {r.get('skipped')}"
    extra = "".join(f"; {k} {r[k]}" for k in ("embedded", "embedSkipped", "embedError",
                                             "sessions") if k in r)
    return f"{stamp} qmd update ({ev.reason}): {r.get('updateMs')} ms{extra}"


def cmd_watch(args: argparse.Namespace) -> int:
    from ..live import LiveIndex

    lock = threading.Lock()
    timers: Any = None

    def show(ev: Any) -> None:
        with lock:
            print(_line(ev, args.json), flush=True)
        if timers is not None and ev.report is not None and ev.report.wrote_anything:
            timers.poke()  # qmd follows the files, debounce_ms after the last change

    def show_qmd(ev: Any) -> None:
        with lock:
            print(_qmd_line(ev, args.json), flush=True)

    idx = open_index(args)
    backend = open_backend_for(idx, args)  # --backend qmd: qmd's timers run as well
    if args.once:  # a backend with an index of its own (qmd) updates that, and says so
        report = backend.files_changed(force=True)
        if report is not None:
            print(json.dumps(report, default=str) if args.json else f"qmd: {report}",
                  flush=True)
            backend.release()
            idx.close()
            return 0
    timers = backend.follow(show_qmd)
    live = LiveIndex(idx, watch=not args.once, on_sync=show, owner="memory-core watch")
    # SIGTERM (a service manager, `kill`) exits cleanly like Ctrl-C: the heartbeat file goes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        live.start()
        if args.once:
            live.wait_idle(timeout=24 * 3600)
            return 0 if live.last_error is None else 2
        if not args.json:
            print(f"watching {live.workspace} (Ctrl-C stops)", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    finally:
        live.close()
        if timers is not None:
            timers.stop()
        backend.release()  # qmd's own processes; the index closes with ``live``
