"""Days and dated file names.

Two rules decide whether a path is "dated", and they differ on purpose:

- :data:`DIARY_RE`: the reference's diary rule for temporal decay (spec §4.6): exactly
  ``memory/YYYY-MM-DD.md``. Everything else under ``memory/`` (and ``MEMORY.md``) is evergreen.
- :data:`DATED_NAME_RE`: a file *name* that starts with a date, ``YYYY-MM-DD[-slug].md``; the
  short-term (promotion, §6.1) rule and the date hint use it, since ``2026-11-03-standup.md`` is a
  diary to the agent too.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime

DAY_MS = 86_400_000

#: The reference's dated diary (temporal decay): ``memory/YYYY-MM-DD.md`` at any depth prefix.
DIARY_RE = re.compile(r"(?:^|/)memory/(\d{4})-(\d{2})-(\d{2})\.md$")
#: A file name that starts with a date, with an optional ``-slug``: ``2026-11-03-standup.md``.
DATED_NAME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:-[^/]*)?\.md$")
#: Any path whose last component starts with a date (``sessions/2023-05-08.jsonl`` too).
PATH_DATE_RE = re.compile(r"(?:^|/)(\d{4})-(\d{2})-(\d{2})[^/]*$")
_ASKED_RE = re.compile(r"\s*(\d{4})[-/](\d{2})[-/](\d{2})(?:[^\d:]+(\d{1,2}):(\d{2}))?")


def now_ms(now: float | int | None = None) -> int:
    """Epoch milliseconds: ``now`` (itself in ms) when given, else the clock."""
    return int(now) if now is not None else int(time.time() * 1000)


def day_of(ms: int) -> str:
    """The UTC day ``YYYY-MM-DD`` of epoch milliseconds ``ms``."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def asked_ms(text: object) -> int | None:
    """When a question is asked, as epoch ms (UTC): ``2026-11-10``, ``2026-11-10T09:30`` or
    LongMemEval's ``2023/04/01 (Sat) 08:30``; None for anything else (no date, no question)."""
    m = _ASKED_RE.match(text) if isinstance(text, str) else None
    if not m:
        return None
    y, mo, d, hh, mm = (int(g) if g else 0 for g in m.groups())
    try:
        return int(datetime(y, mo, d, hh, mm, tzinfo=UTC).timestamp() * 1000)
    except ValueError:
        return None


def day_start_ms(day: str) -> int:
    """Epoch milliseconds at 00:00 UTC of ``YYYY-MM-DD``."""
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000)


def _date(m: re.Match[str] | None) -> date | None:
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def diary_date(path: str) -> date | None:
    """The date of a reference diary ``memory/YYYY-MM-DD.md`` (temporal decay), else None."""
    return _date(DIARY_RE.search(path))


def dated_name_date(name: str) -> date | None:
    """The date a file *name* ``YYYY-MM-DD[-slug].md`` carries, else None."""
    return _date(DATED_NAME_RE.match(name))


def path_date(path: str) -> date | None:
    """The date the last component of ``path`` starts with (any extension), else None."""
    return _date(PATH_DATE_RE.search(path))
