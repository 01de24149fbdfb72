"""``python -m hack.bench.multikueue``: the bench's command line (``cli``)."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
