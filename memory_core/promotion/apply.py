"""Applying a promotion to ``MEMORY.md`` and undoing it (spec §6.5), under an OS file lock.

This is the only place the engine writes the user's Markdown. Order of an apply, all under the
promotion lock: plan (or re-plan a given preview and refuse if anything changed), check that
``MEMORY.md`` may be written (:func:`~.memory_file.write_target`), then in one state-store
transaction mark the entries, save the backup, add the history row and, last, write the file.
If anything fails nothing is left half-done: the transaction rolls back, the backup is removed,
and if only the commit failed the previous bytes are put back.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from ..base.fileio import ContentChanged, atomic_write, rebased
from .diary import note_undo, promoted_snippets
from .memory_file import memory_path, read_memory_bytes, undo_edit, write_memory, write_target
from .model import (
    LOCK_TIMEOUT_S,
    MEMORY_FILE,
    PROMOTIONS_DIR,
    Now,
    PromotionError,
    RecallEntry,
    full_disk_note,
    iso,
    now_ms,
)
from .plan import ApplyPlan, PlannedEntry, preview_apply
from .scoring import PromotionCandidate
from .state import StateError, StateStore, state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex

LOCK_FILE = "promotion.lock"


@contextmanager
def promotion_lock(workspace: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """The promotion lock: an OS file lock on ``.memory/promotions/promotion.lock``.

    The operating system releases it when its holder's process ends, however it ends, so a
    crashed promotion never blocks the next one and nothing has to guess whether a lock is
    stale. Waiting gives up after ``timeout_s`` with :class:`PromotionError`.
    """
    d = workspace / PROMOTIONS_DIR
    d.mkdir(parents=True, exist_ok=True)
    lock = FileLock(d / LOCK_FILE, timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        raise PromotionError(f"another promotion holds {d / LOCK_FILE}; try again later"
                             ) from None
    try:
        yield
    finally:
        lock.release()


@dataclass
class ApplyResult:
    """What :func:`apply` did. ``wrote`` is False when there was nothing new to promote."""

    wrote: bool
    applied: list[str]
    skipped: dict[str, str]
    reconciled: list[str]
    dropped_sections: list[str]
    memory_path: Path
    backup_path: Path | None
    history_id: int | None
    diff: str
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"wrote": self.wrote, "applied": self.applied, "skipped": self.skipped,
                "reconciled": self.reconciled, "droppedSections": self.dropped_sections,
                "memoryPath": str(self.memory_path),
                "backupPath": str(self.backup_path) if self.backup_path else None,
                "historyId": self.history_id, "warnings": self.warnings, "diff": self.diff}


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _backup(workspace: Path, data: bytes, at: int, suffix: str = "MEMORY.md") -> Path:
    d = workspace / PROMOTIONS_DIR
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{_stamp(at)}-{suffix}"
    n = 1
    while p.exists():
        p = d / f"{_stamp(at)}-{n}-{suffix}"
        n += 1
    atomic_write(p, data)
    return p


def _not_recorded(what: str, e: Exception, notes: list[str], ws: Path) -> PromotionError:
    """A full disk or a state store that refused the write (locked, read-only, damaged), as
    one line, once the clean-up has run: ``MEMORY.md`` has its previous bytes again (unless
    ``notes`` says otherwise), no backup is left behind, the transaction rolled back."""
    why = (os.strerror(e.errno) if isinstance(e, OSError) and e.errno
           else str(e) or type(e).__name__)
    kept = "; ".join(notes) if notes else f"{MEMORY_FILE} and the history are unchanged"
    said = "full" in why or (isinstance(e, OSError) and e.errno == errno.ENOSPC)
    return PromotionError(f"the {what} could not be recorded ({why})"
                          f"{'' if said else full_disk_note(ws)}; {kept}")


def _resync(index: MemoryIndex, notes: list[str]) -> None:
    """Re-index after writing ``MEMORY.md`` so searches see it; a failure is only reported."""
    try:
        index.sync()
    except Exception as e:  # the write succeeded; a stale index is recoverable
        notes.append(f"re-index after the write failed: {e}")


def _recorded_write(index: MemoryIndex, what: str, at: int, backup: tuple[bytes, str] | None,
                    steps: Callable[[StateStore, Path | None], int | None],
                    edit: Callable[[bytes], bytes | None] | None, restore: bytes | None,
                    notes: list[str]) -> tuple[Path | None, int | None]:
    """The write of an apply, an undo or a reviewed update, all or nothing: save ``backup``
    (its bytes, the file name's suffix), then in one state-store transaction run ``steps``
    (the marks and the history row; given the backup's path, returning the history id) and,
    last, write ``MEMORY.md`` by ``edit`` (``None``: no write). If anything fails, the
    transaction rolls back, the backup is removed, and if only the commit failed ``MEMORY.md``
    gets ``restore`` back; a full disk or a refusing store is then one line naming ``what``.
    Returns the backup's path and the history id."""
    ws = index.workspace
    saved: Path | None = None
    written = False
    wrote: bytes | None = None
    try:
        if backup is not None:
            saved = _backup(ws, backup[0], at, backup[1])
        with state_of(index) as st, st.transaction():
            history_id = steps(st, saved)
            if edit is not None:  # last step inside the transaction: a failed write marks nothing
                wrote = write_memory(memory_path(ws), edit)
                written = True
    except BaseException as e:
        if written:  # the commit failed after the write: the old bytes back, with
            try:  # whatever was appended since (best effort, reported)
                write_memory(memory_path(ws), rebased(wrote or b"", restore))
            except PromotionError as not_put_back:
                notes.append(str(not_put_back))
        if saved is not None:  # no orphan backup is left
            saved.unlink(missing_ok=True)
        if isinstance(e, (StateError, OSError)):  # a full disk, a store that refuses the write
            raise _not_recorded(what, e, notes, ws) from e
        raise
    return saved, history_id


def _add_history(st: StateStore, ws: Path, at: int, backup: Path | None, old: bytes | None,
                 new: bytes, entries: Sequence[PlannedEntry], before: list[dict[str, Any]],
                 section: str | None) -> int:
    """Record the history row :func:`undo` reverts; return its id."""
    return st.promotion_add(at, MEMORY_FILE, str(backup.relative_to(ws)) if backup else None,
                            None if old is None else hashlib.sha256(old).hexdigest(),
                            hashlib.sha256(new).hexdigest(), [p.key for p in entries], before,
                            section)


def _mark_promoted(st: StateStore, plan: ApplyPlan) -> list[dict[str, Any]]:
    """Mark the reconciled and the planned entries promoted (each planned one with its
    re-located range); return the planned entries' rows as they were (what undo restores)."""
    at = plan.now_ms
    for key in plan.reconciled:
        row = st.recall_entry(key)
        if row:
            row["promoted_at"] = at
            st.recall_put(row)
    before = []
    for p in plan.entries:
        row = st.recall_entry(p.key)
        if row is None:  # a candidate made by hand: track it from now on
            c = p.candidate
            row = RecallEntry(c.key, c.path, c.start_line, c.end_line, c.snippet,
                              first_recalled_at=at, last_recalled_at=at).to_row()
            before.append({"key": p.key, "absent": True})
        else:
            before.append(dict(row))
        row.update(promoted_at=at, start_line=p.start_line, end_line=p.end_line,
                   snippet=p.snippet)
        st.recall_put(row)
    return before


def _checked_plan(index: MemoryIndex,
                  candidates: Sequence[PromotionCandidate] | ApplyPlan | None,
                  now: Now) -> ApplyPlan:
    if not isinstance(candidates, ApplyPlan):
        return preview_apply(index, candidates, now=now)
    given = candidates
    plan = preview_apply(index, given.candidates, now=given.now_ms)
    if plan.new_text != given.new_text or plan.old_bytes != given.old_bytes:
        raise PromotionError(
            f"{MEMORY_FILE}, a diary or the recall store changed since this preview; "
            "preview again before applying")
    return plan


def apply(index: MemoryIndex,
          candidates: Sequence[PromotionCandidate] | ApplyPlan | None = None, *,
          now: Now = None, resync: bool = True) -> ApplyResult:
    """Promote: write the planned section to ``MEMORY.md`` atomically, keep a backup (§6.5).

    Given an :class:`ApplyPlan`, exactly that plan is written: if ``MEMORY.md``, the diaries or
    the state store changed since it was made, :class:`PromotionError` asks for a new preview.
    Given candidates (or ``None``: those passing the default gates), they are planned and
    written. The recall entries get ``promotedAt`` and their re-located range, and a history row
    records what :func:`undo` restores, in the same transaction as the write. A ``MEMORY.md``
    that may not be written (read-only, immutable, a dangling link) is refused before anything
    changes. With ``resync`` the index is brought up to date afterwards.
    """
    ws = index.workspace
    notes: list[str] = []
    with promotion_lock(ws):
        plan = _checked_plan(index, candidates, now)
        if plan.entries:
            write_target(plan.memory_path)  # refuse early, with one line
        new_bytes = plan.new_text.encode("utf-8")

        def steps(st: StateStore, backup: Path | None) -> int | None:
            before = _mark_promoted(st, plan)
            return _add_history(st, ws, plan.now_ms, backup, plan.old_bytes, new_bytes,
                                plan.entries, before, plan.section) if plan.entries else None

        old = plan.old_bytes
        backup, history_id = _recorded_write(
            index, "promotion", plan.now_ms, (old, "MEMORY.md") if plan.entries and old
            is not None else None, steps, rebased(old or b"", new_bytes) if plan.entries
            else None, old, notes)
        notes.extend(plan.warnings)
    if plan.entries and resync:
        _resync(index, notes)
    return ApplyResult(bool(plan.entries), [p.key for p in plan.entries], plan.skipped,
                       plan.reconciled, plan.dropped_sections, plan.memory_path, backup,
                       history_id, plan.diff, notes)


@dataclass
class UndoResult:
    """What :func:`undo` did; ``restored`` False with ``message`` when it refused or had nothing."""

    restored: bool
    message: str
    history_id: int | None = None
    keys: list[str] = field(default_factory=list)
    memory_path: Path | None = None
    saved_current: Path | None = None  # with force: where the overwritten edits were saved

    def to_dict(self) -> dict[str, Any]:
        return {"restored": self.restored, "message": self.message,
                "historyId": self.history_id, "keys": self.keys,
                "memoryPath": str(self.memory_path) if self.memory_path else None,
                "savedCurrent": str(self.saved_current) if self.saved_current else None}


def _restore_entries(st: Any, entries_before: list[dict[str, Any]]) -> None:
    for before in entries_before:
        if before.get("absent"):
            st.recall_delete(before["key"])
            continue
        row = st.recall_entry(before["key"])
        if row is None:
            continue
        row.update(promoted_at=before["promoted_at"], start_line=before["start_line"],
                   end_line=before["end_line"], snippet=before["snippet"])
        st.recall_put(row)


def undo(index: MemoryIndex, *, force: bool = False, now: Now = None,
         resync: bool = True) -> UndoResult:
    """Revert the newest promotion not yet undone: ``MEMORY.md`` gets its exact previous bytes.

    Refuses (``restored=False``, with the reason) when ``MEMORY.md`` changed since that apply,
    because restoring would throw those edits away; ``force`` restores anyway, after saving the
    current file next to the backups. The entries' ``promotedAt`` and ranges are restored too.
    Repeated calls walk back through earlier promotions. A ``MEMORY.md`` that may not be
    written raises :class:`PromotionError` before anything changes.
    """
    ws = index.workspace
    at = now_ms(now)
    path = memory_path(ws)
    notes: list[str] = []
    with promotion_lock(ws):
        with state_of(index) as st:
            last = st.promotion_last()
        if last is None:
            return UndoResult(False, "nothing to undo: no applied promotion is left to revert",
                              memory_path=path)
        when = iso(last["applied_at"])
        previous: bytes | None = None
        if last["before_sha256"] is not None:
            bpath = ws / last["backup_path"]
            try:
                previous = bpath.read_bytes()
            except OSError as e:
                return UndoResult(False, f"backup {bpath} is unreadable ({e}); nothing changed",
                                  last["id"], last["keys"], path)
            if hashlib.sha256(previous).hexdigest() != last["before_sha256"]:
                return UndoResult(False, f"backup {bpath} does not match what was replaced; "
                                  "nothing changed", last["id"], last["keys"], path)
        snippets = promoted_snippets(index, last["keys"])
        current = read_memory_bytes(ws)
        edit = undo_edit(previous, last["section"], last["after_sha256"])
        try:  # the promoted block taken out, what others wrote since kept
            edit(current or b"")
            clean = True
        except ContentChanged:
            clean = False
        if not clean and not force:
            return UndoResult(
                False, f"{MEMORY_FILE} changed since the promotion of {when}; undoing would "
                "discard those edits. Use force (--force) to restore the previous version "
                "anyway (the current file is saved first).", last["id"], last["keys"], path)
        write_target(path)  # refuse early, with one line

        def steps(st: StateStore, _saved: Path | None) -> None:
            _restore_entries(st, last["entries_before"])
            st.promotion_mark_undone(last["id"], at)

        saved, _ = _recorded_write(
            index, "undo", at, (current, "MEMORY.md.before-undo")
            if not clean and current is not None else None, steps,
            edit if clean else (lambda _cur: previous), current, notes)
        try:  # DREAMS.md told of this promotion: tell it of the undo too
            note_undo(index, snippets, when or "?", now=at)
        except PromotionError as e:
            notes.append(f"DREAMS.md not updated: {e}")
    if resync:
        _resync(index, notes)
    msg = f"restored {MEMORY_FILE} as it was before the promotion of {when}"
    if notes:
        msg += " (" + "; ".join(notes) + ")"
    return UndoResult(True, msg, last["id"], last["keys"], path, saved)


def write_reviewed(index: MemoryIndex, old_bytes: bytes | None, new_text: str, diff: str, *,
                   now: Now = None) -> ApplyResult:
    """Write a reviewed edit of ``MEMORY.md`` (``new_text``, shown as ``diff`` from
    ``old_bytes``) as an apply: under the promotion lock, refused if the file changed since the
    review, with a backup and a history row, so :func:`undo` reverts it like any apply (the
    update of stale lines, :mod:`.stale`; issue #34). No recall entry changes."""
    ws = index.workspace
    path = memory_path(ws)
    notes: list[str] = []
    at = now_ms(now)
    new_bytes = new_text.encode("utf-8")
    with promotion_lock(ws):
        current = read_memory_bytes(ws)
        appended = old_bytes is not None and current is not None and current.startswith(old_bytes)
        if current != old_bytes and not appended:  # the agent's appends are kept (rebased)
            raise PromotionError(f"{MEMORY_FILE} changed since this preview; preview again "
                                 "before applying")
        write_target(path)  # refuse early, with one line

        backup, history_id = _recorded_write(
            index, "update", at, None if old_bytes is None else (old_bytes, "MEMORY.md"),
            lambda st, bak: _add_history(st, ws, at, bak, old_bytes, new_bytes, [], [], None),
            rebased(old_bytes or b"", new_bytes), old_bytes, notes)
    _resync(index, notes)
    return ApplyResult(True, [], {}, [], [], path, backup, history_id, diff, notes)
