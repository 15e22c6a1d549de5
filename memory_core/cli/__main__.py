"""``python -m memory_core.cli``: the same as ``memory-core``."""

import sys

from .main import main

sys.exit(main())
