"""The GenericJob examples of the product manual (shared/specs/genericjob.md,
beside the repository's clone), as users copy them: every YAML block that is
a whole GenericJob. A block that is not YAML, or whose job ends in ``...``
(the manual's "and so on"), is a fragment, not an example to apply."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT.parent / "shared" / "specs" / "genericjob.md"


def examples(kind: str = "GenericJob") -> list[dict[str, Any]]:
    """The manual's whole jobs of ``kind``, in order."""
    found: list[dict[str, Any]] = []
    for block in re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S):
        if re.search(r"^\s*\.\.\.\s*$", block, re.M):
            continue  # elided: a fragment
        try:
            docs = list(yaml.safe_load_all(block))
        except yaml.YAMLError:
            continue
        found += [d for d in docs if isinstance(d, dict) and d.get("kind") == kind]
    return found
