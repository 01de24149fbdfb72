"""hack/'s scripts as modules, for the tests: ``load("gen_crds")`` is the
module ``hack.gen_crds`` (hack/ is a package; pytest's ``pythonpath`` puts
the repository root on ``sys.path``)."""

from __future__ import annotations

import importlib
from types import ModuleType


def load(name: str) -> ModuleType:
    """``hack/<name>.py``, imported as ``hack.<name>``."""
    return importlib.import_module(f"hack.{name}")
