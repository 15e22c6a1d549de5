"""The dream diary, ``DREAMS.md`` (spec §6.1 step 6): a human-facing account of a night.

The reference has a sub-agent (an LLM) write a narrative from the phases' snippets and the
promotions, and appends it between ``<!-- openclaw:dreaming:diary:start -->`` and ``<!--
openclaw:dreaming:diary:end -->`` (``appendNarrativeEntry``: the entry is ``\\n---\\n\\n*<date>*
\\n\\n<narrative>\\n`` before the last end marker; a file without markers gets a ``# Dream Diary``
section first). We have no LLM, so the narrative is a deterministic, factual entry instead:
the date, what Light staged, what REM found, what was promoted, at most five of each.

The diary is written only when asked (``dream --diary``, ``promote --apply --diary``,
:func:`write_diary`), atomically, like promotion's writes. It is never a promotion source:
``DREAMS.md`` is not a short-term path (:func:`.model.is_short_term_path`), so a search hit on
it is never recorded and it never becomes a candidate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from .memory_file import edit_markdown
from .model import Now, now_ms
from .state import state_of

if TYPE_CHECKING:
    from ..index import MemoryIndex
    from .phases import PhaseReport

DIARY_START = "<!-- openclaw:dreaming:diary:start -->"
DIARY_END = "<!-- openclaw:dreaming:diary:end -->"
DREAMS_NAMES = ("DREAMS.md", "dreams.md")
#: how many staged candidates, themes, truths and promotions an entry names, and how long
#: each may be (a staged snippet is up to a whole search chunk: a diary entry names it)
MAX_ITEMS = 5
MAX_ITEM_CHARS = 200
_CONFIDENCE_TAIL = re.compile(r"\s*\[confidence=[^\]]*\]\s*$")
_THEME = re.compile(r"^- Theme: `([^`]+)` kept surfacing across (\d+) memories\.")


def dreams_path(workspace: Path) -> Path:
    """``resolveDreamsPath``: an existing ``DREAMS.md`` or ``dreams.md``, else ``DREAMS.md``."""
    for name in DREAMS_NAMES:
        if (workspace / name).exists():
            return workspace / name
    return workspace / DREAMS_NAMES[0]


def diary_date(ms: int, timezone: str = "UTC") -> str:
    """The entry's date line as the reference formats it (``en-US``, long month, 12-hour
    clock, the zone's abbreviation): ``November 23, 2026 at 10:00 AM UTC``."""
    t = datetime.fromtimestamp(ms / 1000, ZoneInfo(timezone))
    hour = t.hour % 12 or 12
    return (f"{t.strftime('%B')} {t.day}, {t.year} at {hour}:{t.minute:02d} "
            f"{'AM' if t.hour < 12 else 'PM'} {t.tzname() or timezone}")


def _short(text: str) -> str:
    if len(text) <= MAX_ITEM_CHARS:
        return text
    cut = text.rfind(" ", 0, MAX_ITEM_CHARS)
    return text[:cut if cut > MAX_ITEM_CHARS // 2 else MAX_ITEM_CHARS].rstrip(" ;,.") + " …"


def _bullets(items: Sequence[str]) -> list[str]:
    shown = [f"- {_short(x)}" for x in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        shown.append(f"- … and {len(items) - MAX_ITEMS} more.")
    return shown


def diary_narrative(reports: Sequence[PhaseReport], promoted: Sequence[str] = ()) -> str:
    """The factual entry for one night: what each phase staged or found, and what was promoted
    (the bullets written into ``MEMORY.md``); ``""`` when there is nothing to tell."""
    lines: list[str] = []
    for r in reports:
        if r.phase == "light":
            staged = [b.removeprefix("- Candidate: ") for b in r.body
                      if b.startswith("- Candidate: ")]
            if staged:
                lines += [f"Light sleep staged {len(staged)} of {r.considered} recent "
                          f"memories:", *_bullets(staged), ""]
        else:
            themes = [f"`{m.group(1)}` ({m.group(2)} memories)"
                      for m in map(_THEME.match, r.body) if m]
            at = r.body.index("### Possible Lasting Truths") if (
                "### Possible Lasting Truths" in r.body) else len(r.body)
            truths = [_CONFIDENCE_TAIL.sub("", b.removeprefix("- ")) for b in r.body[at + 1:]
                      if b.startswith("- ") and not b.startswith("- No strong")]
            if themes:
                lines += [f"REM sleep found {len(themes)} recurring "
                          f"theme{'s' if len(themes) > 1 else ''}: {', '.join(themes[:5])}.", ""]
            if truths:
                lines += ["Possible lasting truths:", *_bullets(truths), ""]
    if promoted:
        lines += [f"Promoted into MEMORY.md: {len(promoted)} "
                  f"entr{'ies' if len(promoted) > 1 else 'y'}:", *_bullets(list(promoted)), ""]
    return "\n".join(lines).strip()


def add_entry(existing: str, entry: str) -> str:
    """``appendNarrativeEntry``'s placement: before the last end marker; after a start marker
    that has no end (closing it); else in a new ``# Dream Diary`` section before the rest."""
    if DIARY_START in existing and DIARY_END in existing:
        i = existing.rindex(DIARY_END)
        out = existing[:i] + entry + "\n" + existing[i:]
    elif DIARY_START in existing:
        i = existing.index(DIARY_START) + len(DIARY_START)
        out = existing[:i] + entry + "\n" + DIARY_END + "\n" + existing[i:]
    else:
        section = f"# Dream Diary\n\n{DIARY_START}{entry}\n{DIARY_END}\n"
        out = section if not existing.strip() else section + "\n" + existing
    return out if out.endswith("\n") else out + "\n"


def promoted_snippets(index: MemoryIndex, keys: Sequence[str]) -> list[str]:
    """The (re-located) snippets of the promoted entries ``keys``, in order."""
    with state_of(index) as st:
        rows = [st.recall_entry(k) for k in keys]
    return [str(r["snippet"]) for r in rows if r]


def write_diary(index: MemoryIndex, reports: Sequence[PhaseReport] = (),
                promoted: Sequence[str] = (), *, now: Now = None) -> str | None:
    """Append the night's entry (:func:`diary_narrative`) to ``DREAMS.md`` atomically; return
    the workspace-relative path written, or ``None`` when there was nothing to tell.
    ``promoted`` are the promoted texts (:func:`promoted_snippets` of an apply's keys)."""
    narrative = diary_narrative(reports, promoted)
    if not narrative:
        return None
    return _append(index, dreams_path(index.workspace), narrative, now)


def _append(index: MemoryIndex, p: Path, body: str, now: Now) -> str:
    """Add an entry dated ``now`` (in the workspace's time zone) with ``body`` to ``p``."""
    with state_of(index) as st:
        tz = st.timezone()
    entry = f"\n---\n\n*{diary_date(now_ms(now), tz)}*\n\n{body}\n"
    edit_markdown(p, lambda old: add_entry(old, entry))  # a symlink stays one; CRLF stays
    return p.name


def note_undo(index: MemoryIndex, snippets: Sequence[str], when: str, *, now: Now = None
              ) -> str | None:
    """When ``DREAMS.md`` told of a promotion that was just undone (its entry lists one of the
    promoted ``snippets``), add an entry saying so: the diary does not keep claiming what
    ``MEMORY.md`` no longer holds. Returns the path written, or ``None``."""
    p = dreams_path(index.workspace)
    try:
        text = p.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
    except OSError:
        return None
    told = "Promoted into MEMORY.md" in text and any(
        f"- {_short(s)}\n" in text for s in snippets)
    if not told:
        return None
    n = len(snippets)
    lines = [f"Undid the promotion of {when}: {n} entr{'ies' if n != 1 else 'y'} taken back "
             "out of MEMORY.md:", *_bullets(list(snippets))]
    return _append(index, p, "\n".join(lines), now)
