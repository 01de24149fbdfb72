"""The XGBoostTrainingJob examples of the product manual, read from the
manual itself (``shared/specs/xgboosttrainingjob.md`` beside the clone), for
the unit tests (the model) and the integration tests (the API server).

A block of the manual is one of:

* a whole job (``kind: XGBoostTrainingJob``), YAML as written;
* a whole job whose container is elided (``- ...``): the elision dropped, the
  rest as written;
* a fragment (``...`` then ``spec:`` or ``status:``): its ``spec`` merged into
  the manual's first job, its ``status`` on its own.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
MANUAL = ROOT.parent / "shared" / "specs" / "xgboosttrainingjob.md"
ELIDED_CONTAINER = re.compile(r"^(\s*)- \.\.\.\n\s*", re.M)


def blocks() -> list[str]:
    """Every YAML block of the manual, in order."""
    return re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S)


def documents(block: str) -> list[dict[str, Any]]:
    """The block's documents, its elisions dropped (see the module's docstring)."""
    text = ELIDED_CONTAINER.sub(r"\1- ", block)
    text = "\n".join(line for line in text.splitlines() if line.strip() != "...")
    return [d for d in yaml.safe_load_all(text) if d]


def jobs() -> dict[str, dict[str, Any]]:
    """Every job the manual shows, by ``<block>`` or ``<block>-<document>``: its
    whole jobs, and its ``spec`` fragments on the first whole job."""
    out: dict[str, dict[str, Any]] = {}
    base: dict[str, Any] | None = None
    for i, block in enumerate(blocks()):
        docs = documents(block)
        for j, doc in enumerate(docs):
            key = f"{i}" if len(docs) == 1 else f"{i}-{j}"
            if doc.get("kind") == "XGBoostTrainingJob":
                out[key] = doc
                base = base or doc
            elif "spec" in doc and base is not None:
                job = copy.deepcopy(base)
                job["spec"].update(doc["spec"])
                out[key] = job
    return out


def statuses() -> dict[str, dict[str, Any]]:
    """Every ``status`` fragment of the manual, by block."""
    return {
        f"{i}": doc["status"]
        for i, block in enumerate(blocks())
        for doc in documents(block)
        if "status" in doc
    }
