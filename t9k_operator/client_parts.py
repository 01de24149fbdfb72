"""What the integrations' folders offer ``t9k``, the SDK and the local run,
found by the folders themselves rather than named by the clients.

The operator knows its integrations from the registry
(:mod:`t9k_operator.registry`), which the clients do not load (it brings the
reconcilers with it). A folder that has something for the clients (the
workdir's packing and the path its replicas find it at) offers it in a module
``client`` with a mapping ``PARTS`` from a part's name to the part;
:func:`part` finds one among the folders present. A client that asks for a
part no folder offers is told so in its own terms (the SDK raises
``Unsupported``), so deleting an integration's folder and its registry line
removes its client side too.

Imports nothing of the project: the folders are loaded by name when first asked.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Mapping

PACKAGE = "t9k_operator.integrations"
MODULE = "client"
"""The module of a folder that offers parts, with its mapping ``PARTS``."""


@functools.cache
def parts() -> Mapping[str, object]:
    """Every part the folders present offer, by name (the first folder, in name
    order, wins a name two offer)."""
    package = importlib.import_module(PACKAGE)
    found: dict[str, object] = {}
    for folder in sorted(info.name for info in pkgutil.iter_modules(package.__path__)):
        name = f"{PACKAGE}.{folder}.{MODULE}"
        if importlib.util.find_spec(name) is None:
            continue
        offered: Mapping[str, object] = importlib.import_module(name).PARTS
        for key, value in offered.items():
            found.setdefault(key, value)
    return found


def part(name: str) -> object | None:
    """The part ``name``, or None when no folder present offers it."""
    return parts().get(name)
