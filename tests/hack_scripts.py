"""hack/'s scripts as modules, for the tests: ``load("generate.crds")`` is the
module ``hack.generate.crds`` (hack/ is a package; pytest's ``pythonpath``
puts the repository root on ``sys.path``)."""

from __future__ import annotations

import importlib
from types import ModuleType


def load(name: str) -> ModuleType:
    """The module ``hack.<name>`` (a dotted name for one in a subpackage:
    ``generate.crds``, ``release.lock``)."""
    return importlib.import_module(f"hack.{name}")
