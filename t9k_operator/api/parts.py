"""What an integration adds to what users see: its part of a job's status
(its field, its schema, the lines ``t9k describe`` shows of it) and its part
of ``t9k``'s commands.

An integration that adds to every job's status (the gang scheduler's
``podGroup``, Kueue's ``workload``) states its part once, as a
:class:`StatusPart`, beside its pure builders: the CRD generator merges the
part's schema into the status of every job kind, the integration writes its
field, and ``t9k describe`` shows it under its section with the part's own
lines. The parts are listed in :data:`t9k_operator.registry.PARTS`.

An integration whose figures ``t9k`` fetches itself (the GPU usage, from
Prometheus) adds to ``t9k``'s commands with a :class:`CommandView`: the
``VIEW`` of its folder's ``view`` module, which only ``t9k`` loads
(:func:`t9k_operator.registry.views`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from t9k_operator.api.crd import PrinterColumn


@dataclass(frozen=True)
class StatusPart:
    """One integration's part of a job's status."""

    key: str
    """Its field of ``status`` (``podGroup``)."""
    model: type[BaseModel]
    """Its schema: the model of the field's value."""
    description: str
    """What the field says, for the CRD (``kubectl explain``)."""
    section: str
    """The ``t9k describe`` section it is shown under (``Scheduling``); "" for
    none (the integration's view shows it, as ``status.progress`` in the head)."""
    lines: Callable[[Mapping[str, Any]], list[str]]
    """What ``t9k describe`` shows of the field's value, a line each."""
    absent: str = ""
    """What its section says when no part of the section is in the status ("" for
    nothing: then the section is left out)."""
    printer_columns: tuple[PrinterColumn, ...] = ()
    """Its columns of ``kubectl get``, after the kind's own and before Age."""


SCHEDULING = "Scheduling"
"""The ``t9k describe`` section of the scheduling integrations' parts."""
DEFAULT_SCHEDULER = "default scheduler (no PodGroup, no Workload)"
"""What that section says when the job has neither part."""


JobKey = tuple[str, str, str]
"""A job: (namespace, kind, name)."""


@dataclass(frozen=True)
class Columns:
    """An integration's columns of ``t9k top jobs``, shown before NODES."""

    headers: tuple[str, ...] = ()
    cells: Mapping[JobKey, tuple[str, ...]] = field(default_factory=dict)
    """Each job's cells, by (namespace, kind, name); "-" in each for a job without."""
    note: str = ""
    """A line for stderr after the table ("" for none)."""


@dataclass(frozen=True)
class ListColumn:
    """An integration's column of ``t9k list``, shown after the job's own
    figures (DURATION, PROGRESS, ETA) and before NODES."""

    header: str
    cell: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]], datetime], str]
    """A job's cell from the job, every pod listed with it, and now ("" shows "-")."""


class CommandView:
    """An integration's part of ``t9k``'s commands. Each hook's default adds
    nothing; ``args`` are the command's parsed arguments, the jobs and pods
    as the API server has them."""

    columns: tuple[ListColumn, ...] = ()
    """Its columns of ``t9k list``."""
    head_after: str = "GPUs"
    """The line of ``t9k describe``'s head its :meth:`fields` follow."""

    def add_arguments(self, command: str, parser: argparse.ArgumentParser) -> None:
        """Its flags of ``command`` (``describe``, ``top``)."""

    def fields(
        self, args: argparse.Namespace, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
    ) -> list[tuple[str, str]]:
        """Its ``(label, value)`` lines of ``t9k describe``'s head, after the line
        :attr:`head_after` names (label "" continues the line before)."""
        return []

    def top_jobs(
        self,
        args: argparse.Namespace,
        jobs: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        namespace: str | None,
    ) -> Columns | None:
        """Its columns of ``t9k top jobs`` (asked only when some job holds GPUs
        or pods; ``namespace`` None: every namespace's jobs)."""
        return None

    def charts(
        self,
        prometheus_url: str,
        job: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        span: tuple[float, float, int],
    ) -> dict[str, Any]:
        """Its series of the console's Job page over the job's life, asked of the
        Prometheus at ``prometheus_url``: ``span`` is (start, end, step), unix
        seconds; JSON data by name (an ``...Error`` name: why a series is missing)."""
        return {}
