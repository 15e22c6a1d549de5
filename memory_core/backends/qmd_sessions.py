"""Session transcripts for qmd: exported as Markdown into their own collection (spec §9).

The reference's ``QmdMemoryManager.exportSessions`` and ``renderSessionMarkdown``: before every
``qmd update`` each transcript (rendered as the builtin engine renders it: ``User:`` /
``Assistant:`` lines) is written to ``<export dir>/<name>.md`` as ``# Session <name>``, a blank
line and the conversation (``(empty)`` when there is none); transcripts older than
``retention_days`` are not exported, and exports whose transcript is gone or too old are pruned.
The collection is ``sessions-<agent>`` (``**/*.md``, source ``sessions``).

Two guards of ours: the export folder may not be, hold or lie inside the workspace's memory or
transcript folders (pruning there would delete the user's files), and only files this exporter
wrote (``# Session`` first line) are ever pruned. A file is rewritten only when its text
changed, so ``qmd update`` re-reads only what changed.
"""

from __future__ import annotations

import copy
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..base.config import MemoryConfig
from ..base.fileio import atomic_write
from ..write.sources import SourceError, list_files, load

HEADER = "# Session "
DAY_MS = 86_400_000
_UNSAFE = re.compile(r"[^\w.\-]+", re.UNICODE)


class ExportRefused(ValueError):
    """The export folder would overlap the user's own files: one line saying why."""


@dataclass
class ExportReport:
    """What one export did."""

    exported: int = 0
    written: int = 0
    pruned: int = 0
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"exported": self.exported, "written": self.written, "pruned": self.pruned,
                "skipped": self.skipped}


def render_session_markdown(name: str, content: str) -> str:
    """The reference's ``renderSessionMarkdown``: a title, a blank line, the conversation."""
    body = content.strip() or "(empty)"
    return f"{HEADER}{name}\n\n{body}\n"


def export_name(path: str) -> str:
    """``<transcript name without .jsonl>.md``, made safe as one file name."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    base = base[: -len(".jsonl")] if base.endswith(".jsonl") else base
    safe = _UNSAFE.sub("-", base).strip(".-") or "session"
    return f"{safe}.md"


def check_export_dir(export_dir: Path, workspace: Path, config: MemoryConfig) -> None:
    """Refuse a folder that is, holds or sits inside the user's memory or transcripts."""
    target = Path(os.path.realpath(export_dir))
    ws = Path(os.path.realpath(workspace))
    raw = [config.sources.sessions_dir, *(e.path for e in config.sources.extra_paths),
           *(p.path for p in config.qmd.paths)]
    theirs = [ws / "memory", *(Path(os.path.realpath(ws / os.path.expanduser(r))) for r in raw)]
    if target == ws or ws.is_relative_to(target):
        raise ExportRefused(f"qmd.sessions.export_dir {export_dir} is the workspace or holds it")
    for folder in theirs:
        if target.is_relative_to(folder) or folder.is_relative_to(target):
            raise ExportRefused(f"qmd.sessions.export_dir {export_dir} overlaps {folder}; "
                                "choose a folder of its own")


def export_sessions(workspace: Path, config: MemoryConfig, export_dir: Path,
                    now_ms: int | None = None) -> ExportReport:
    """Write the transcripts as Markdown into ``export_dir`` and prune stale exports."""
    check_export_dir(export_dir, workspace, config)
    export_dir.mkdir(parents=True, exist_ok=True)
    report = ExportReport()
    retention = config.qmd.sessions.retention_days
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - retention * DAY_MS if retention else None
    only_sessions = copy.deepcopy(config)
    only_sessions.sources.sources = ["sessions"]
    only_sessions.sources.extra_paths = []
    keep: set[str] = set()
    for f in list_files(workspace, only_sessions).files:
        if f.kind != "session":
            continue
        if cutoff is not None and 0 <= f.mtime_ms < cutoff:
            report.skipped += 1
            continue
        try:
            doc = load(f)
        except (SourceError, OSError) as e:
            report.warnings.append(f"session export: {f.path}: {e}")
            continue
        name = export_name(f.path)
        if name in keep:  # two transcripts with one name: the first listed wins
            report.warnings.append(f"session export: {f.path}: {name} already exported")
            continue
        keep.add(name)
        text = render_session_markdown(name[: -len(".md")], doc.text)
        target = export_dir / name
        report.exported += 1
        try:
            if target.read_text(encoding="utf-8") == text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        atomic_write(target, text.encode("utf-8"), durable=False)
        report.written += 1
    for entry in os.scandir(export_dir):
        if not entry.name.endswith(".md") or entry.name in keep or not entry.is_file(
                follow_symlinks=False):
            continue
        if _ours(Path(entry.path)):
            os.unlink(entry.path)
            report.pruned += 1
    return report


def _ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            return fh.read(len(HEADER)) == HEADER
    except OSError:
        return False
