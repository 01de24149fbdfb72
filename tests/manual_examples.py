"""The examples of the product manual (shared/specs/genericjob.md, or another
page of it, beside the repository's clone), as users copy them: every YAML
block that is a whole job of the kind asked for. A block that is not YAML, or
whose job ends in ``...`` (the manual's "and so on"), is a fragment, not an
example to apply."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MANUAL = ROOT.parent / "shared" / "specs" / "genericjob.md"


SECTIONS = {
    "创建 GenericJob": "basic",
    "资源配置": "resources",
    "环境变量": "env",
    "变量替换": "variables",
}
"""The manual's sections, by the names the tests give their examples (the
containers of ``resources`` and ``env`` have no name: crd_helpers.DOC_FRAGMENTS)."""


def example_texts(kind: str = "GenericJob", manual: Path = MANUAL) -> dict[str, str]:
    """The manual's whole jobs of ``kind`` as written, by their section's name in
    :data:`SECTIONS` (else ``manual-<n>``); none when the manual (a page of
    shared/specs, :data:`MANUAL` unless told) is not beside the clone."""
    if not manual.exists():
        return {}
    found: dict[str, str] = {}
    text = manual.read_text()
    for match in re.finditer(r"```yaml\n(.*?)```", text, re.S):
        block = match[1]
        if re.search(r"^\s*\.\.\.\s*$", block, re.M):
            continue  # elided: a fragment
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == kind:
            headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
            heading = headings[-1].strip() if headings else ""
            found[SECTIONS.get(heading, f"manual-{len(found) + 1}")] = block
    return found


def examples(kind: str = "GenericJob", manual: Path = MANUAL) -> list[dict[str, Any]]:
    """The manual's whole jobs of ``kind``, parsed, in order."""
    return [yaml.safe_load(text) for text in example_texts(kind, manual).values()]


MANUALS_2025 = ROOT.parent / "shared" / "specs" / "t9k-2025"
"""T9k's 2025 manual, beside the clone (shared/specs/t9k-2025)."""


def whole_jobs(manual: Path, kinds: tuple[str, ...]) -> dict[str, str]:
    """The YAML blocks of ``manual`` that are a whole job of one of ``kinds`` (its
    spellings), as written, by the heading above each (repeated headings get
    ``-2``, ...). A block with a line ``...`` or an item ``- ...`` (the manual's
    "and so on") is a fragment, not an example to apply."""
    found: dict[str, str] = {}
    text = manual.read_text()
    for match in re.finditer(r"```yaml\n(.*?)```", text, re.S):
        block = match[1]
        if re.search(r"^\s*(- )?\.\.\.\s*$", block, re.M):
            continue
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and doc.get("kind") in kinds:
            headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
            name = headings[-1].strip() if headings else "top"
            key, n = name, 1
            while key in found:
                n += 1
                key = f"{name}-{n}"
            found[key] = block
    return found
