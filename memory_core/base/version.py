"""The package version, in a module of its own.

Modules inside ``memory_core`` import it from here, never from the package ``__init__``: that
``__init__`` imports them, so ``from . import __version__`` would close an import cycle.
"""

__version__ = "0.1.0"
