"""A job's row on the Jobs page: the row ``t9k list -A`` prints for it.

The cells come from the CLI's own :func:`~t9k_operator.cli.render.list_row`
under :func:`~t9k_operator.cli.render.job_headers` (namespace included, not
wide), so the page and the terminal never disagree on what a job shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from t9k_operator.cli import render

Obj = Mapping[str, Any]


def headers() -> list[str]:
    """The Jobs page's columns: ``t9k list -A``'s."""
    return render.job_headers(all_namespaces=True, wide=False)


def job_key(namespace: str, kind: str, name: str) -> str:
    """A job's key on the page: ``namespace/Kind/name`` (two kinds may share a name)."""
    return f"{namespace}/{kind}/{name}"


def key_of(job: Obj) -> str:
    meta = job.get("metadata") or {}
    return job_key(str(meta.get("namespace") or ""), str(job.get("kind")), str(meta.get("name")))


@dataclass(frozen=True)
class Row:
    """One job's row: its key and its cells, in :func:`headers`' order."""

    key: str
    cells: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "cells": list(self.cells)}


def row_of(job: Obj, pods: Sequence[Obj], now: datetime) -> Row:
    """The job's row, from the job and its pods (any others are ignored)."""
    cells = render.list_row(job, pods, now, all_namespaces=True, wide=False)
    return Row(key_of(job), tuple(cells))
