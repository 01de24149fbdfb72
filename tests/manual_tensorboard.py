"""The TensorBoard pages of T9k's 2025 manual (shared/specs/t9k-2025/, beside
the repository's clone), read as users read them: the guide's YAML examples
and the API reference's field tables.

The guide's examples are parts of a TensorBoard's spec (``logDir: ...``
followed by YAML's document end ``...``): each is a TensorBoard whose spec
is the block as written. A block that is a whole TensorBoard is taken as it
is. Nothing of the manual is copied into the repository: it is read here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT.parent / "shared" / "specs" / "t9k-2025"
GUIDE = MANUAL / "tensorboard.md"
REFERENCE = MANUAL / "tensorboard-api.md"
PAGES = (GUIDE, REFERENCE)


def missing() -> list[Path]:
    return [page for page in PAGES if not page.exists()]


def examples() -> dict[str, dict[str, Any]]:
    """Every TensorBoard of the pages' YAML blocks, by ``<page>-<n>``: a whole
    one as written, or a spec part as the spec of a TensorBoard of that name."""
    found: dict[str, dict[str, Any]] = {}
    for page in PAGES:
        for n, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", page.read_text(), re.S)):
            doc = yaml.safe_load(block)
            name = f"{page.stem}-{n}"
            if isinstance(doc, dict) and doc.get("kind") == "TensorBoard":
                found[name] = doc
            elif isinstance(doc, dict):
                found[name] = {
                    "apiVersion": "tensorstack.dev/v1beta1",
                    "kind": "TensorBoard",
                    "metadata": {"name": name},
                    "spec": doc,
                }
    return found


def reference_fields(type_name: str) -> list[str]:
    """The fields of one type of the API reference (its table's first column)."""
    text = REFERENCE.read_text()
    section = re.search(rf"^#### {type_name}\n(.*?)(?=^#### |\Z)", text, re.S | re.M)
    assert section is not None, f"{REFERENCE} has no type {type_name}"
    return re.findall(r"^\| `(\w+)` ", section[1], re.M)
