"""``python -m hack.bench.console``: the bench's command line (``cli``)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
