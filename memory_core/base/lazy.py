"""Heavy third-party modules imported on first use, so that a command which never touches them
(``memory-core index`` with nothing to do, ``status``) does not pay for them at start.

``numpy`` costs 45–115 ms to import here, more than a no-op ``index`` spends on its work. The
engine's modules bind ``np`` to :data:`numpy` (the real module for type checkers)::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from .common.lazy import numpy as np

The first attribute read imports the module and copies its namespace into the stand-in, so later
reads are plain module attribute lookups (no ``__getattr__`` call on the hot path). The stand-in
is not put in ``sys.modules``: ``"numpy" in sys.modules`` still says whether numpy was loaded.
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, cast


class LazyModule(types.ModuleType):
    """A module object standing for ``name`` until one of its attributes is read."""

    def __getattr__(self, attr: str) -> Any:
        # only called for names not yet in our __dict__: the first read, or a name the real
        # module provides through its own module __getattr__ (numpy's lazy submodules)
        real = importlib.import_module(self.__name__)
        if not self.__dict__.get("_loaded"):
            self.__dict__.update(real.__dict__)
            self.__dict__["_loaded"] = True
        return getattr(real, attr)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__name__))


class _LazyPattern:
    """A regular expression compiled on its first use (see :func:`lazy_pattern`)."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.__dict__["_args"] = (pattern, flags)

    def __getattr__(self, attr: str) -> Any:
        # only for names not yet in our __dict__: the compiled pattern's bound methods are
        # copied in, so later calls are plain attribute lookups
        value = getattr(re.compile(*self.__dict__["_args"]), attr)
        self.__dict__[attr] = value
        return value


def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)`` on first use. A class of whole Unicode blocks (the CJK
    ones) takes 1.5–3.5 ms to compile; several at import were a tenth of a no-op ``index``'s
    imports. For method calls (``.match``, ``.sub``, ...) only, not ``re.sub(pattern, ...)``."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562) for the public names in ``table`` (name →
    the submodule defining it): each imported the first time it is asked for, then kept in
    the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


#: numpy, imported the first time any ``np.<name>`` is read.
numpy = LazyModule("numpy")
