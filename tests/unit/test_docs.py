"""The docs speak to the project's users and maintainers: what it does and
how, never the tracker's numbers of how it came to be."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *ROOT.glob("charts/*/*.md")])
# "issue 17", "issue #17", "(#17)", "PR 12": a number from the tracker.
TRACKER = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+\b|\(#\d+\)", re.IGNORECASE)


def test_the_docs_name_no_issue_numbers() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in DOCS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if TRACKER.search(line)
    ]
    assert found == [], "\n".join(found)


def test_the_check_sees_a_tracker_number() -> None:
    assert TRACKER.search("as issue 17 asked") and TRACKER.search("fixed (#12)")
    assert not TRACKER.search("an issue with 8 GPUs") and not TRACKER.search("step #3 of")
