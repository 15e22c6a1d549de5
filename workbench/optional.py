"""The engine's evaluation and promotion APIs, imported when they exist.

The Evaluate and Promotion pages use these; while a module (or a name in it) is missing they say
so plainly instead of failing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EVALUATION_NAMES = ("available_query_sets", "load_query_set", "run_eval", "sweep", "compare")
PROMOTION_NAMES = ("list_candidates", "preview_apply", "apply", "undo", "replay")


def load(module: str, names: tuple[str, ...]) -> tuple[ModuleType | None, str | None]:
    """``(module, None)`` when ``memory_core.<module>`` has all ``names``, else ``(None, why)``."""
    try:
        mod = importlib.import_module(f"memory_core.{module}")
    except ImportError as e:
        return None, f"`memory_core.{module}` is not available yet ({e})."
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        return None, (f"`memory_core.{module}` is not complete yet: missing "
                      + ", ".join(f"`{n}`" for n in missing) + ".")
    return mod, None


def evaluation() -> tuple[ModuleType | None, str | None]:
    return load("evaluation", EVALUATION_NAMES)


def promotion() -> tuple[ModuleType | None, str | None]:
    return load("promotion", PROMOTION_NAMES)
