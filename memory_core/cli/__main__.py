"""``python -m memory_core.cli``: the same as ``memory-core``."""

import sys

from . import main

sys.exit(main())
