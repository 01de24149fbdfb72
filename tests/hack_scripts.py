"""hack/'s scripts as modules, for the tests (hack/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HACK = Path(__file__).resolve().parents[1] / "hack"


def load(name: str) -> ModuleType:
    """``hack/<name>.py``, freshly loaded as the module ``hack_<name>``.

    It is registered in ``sys.modules`` (a dataclass looks its module up
    there), and hack/ is on ``sys.path`` while it loads (deploy.py imports
    cluster.py)."""
    spec = importlib.util.spec_from_file_location(f"hack_{name}", HACK / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(HACK))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HACK))
    return module
