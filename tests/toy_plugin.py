"""The toy kind and the toy integration (tests/toykind/) as an installed
plugin: a ``t9k_toy-0.0.dist-info`` whose entry points are their registry
lines, written into a directory that goes on a process's PYTHONPATH.

The processes run with the repository root on their path too (the operator's
cwd is the root; :func:`env` adds it), so ``tests.toykind`` imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST_INFO = "t9k_toy-0.0.dist-info"
ENTRY_POINTS = """\
[t9k_operator.kinds]
toy = tests.toykind.kind:ToyKind

[t9k_operator.integrations]
toy-seen = tests.toykind.integration:ToySeen

[t9k_operator.status_parts]
toy = tests.toykind.integration:PART
"""
"""The toy kind's registry line, and the toy integration's two."""


def write_dist(path: Path, entry_points: str = ENTRY_POINTS, name: str = "t9k-toy") -> Path:
    """``path`` with an installed distribution ``name`` declaring ``entry_points``
    (the toy's by default); ``path`` is what goes on the path."""
    info = path / f"{name.replace('-', '_')}-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return path


def env(plugin_dir: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with ``plugin_dir`` and the
    repository root first on PYTHONPATH."""
    out = dict(os.environ if base is None else base)
    paths = [str(plugin_dir), str(ROOT), *filter(None, out.get("PYTHONPATH", "").split(os.pathsep))]
    out["PYTHONPATH"] = os.pathsep.join(paths)
    return out
