"""``python3 -m hack.release.rootfs build|key|base``: see the package."""

import sys

from . import main

sys.exit(main())
