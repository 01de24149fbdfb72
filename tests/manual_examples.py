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


def example_texts(kind: str = "GenericJob") -> dict[str, str]:
    """The manual's whole jobs of ``kind`` as written, by their order
    (``manual-1``, ...); none when the manual is not beside the clone."""
    if not MANUAL.exists():
        return {}
    found: dict[str, str] = {}
    for block in re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S):
        if re.search(r"^\s*\.\.\.\s*$", block, re.M):
            continue  # elided: a fragment
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == kind:
            found[f"manual-{len(found) + 1}"] = block
    return found


def examples(kind: str = "GenericJob") -> list[dict[str, Any]]:
    """The manual's whole jobs of ``kind``, parsed, in order."""
    return [yaml.safe_load(text) for text in example_texts(kind).values()]
