"""The CLI's start-up without the garbage collector's passes over what it imports.

The parser's and the engine's imports create thousands of objects that live as long as the
process, and no garbage: the collector's passes over them (~20 young-generation collections
during the imports, and every older-generation pass after them: 4-8 ms CPU of a no-op
``memory-core index``) would find nothing to free. :func:`begin` pauses the collector before
the first command's imports; :func:`done`, once that command's arguments are parsed, freezes
what exists (``gc.freeze``: never scanned by a collection again) and resumes it. Once per
process: a second command run in the same process (the tests) changes nothing.
"""

from __future__ import annotations

import gc

#: Whether the collector was enabled when :func:`begin` paused it (empty: not paused now).
_paused: list[bool] = []
_begun = False


def begin() -> None:
    """Pause the collector for the first command's start-up (a no-op after that)."""
    global _begun
    if not _begun:
        _begun = True
        _paused.append(gc.isenabled())
        gc.disable()


def done() -> None:
    """Freeze what the start-up created and resume the collector (a no-op unless paused)."""
    if _paused:
        gc.freeze()
        if _paused.pop():
            gc.enable()
