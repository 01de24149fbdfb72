"""A part of a job's status that an integration owns: its field, its schema,
and the lines ``t9k describe`` shows of it.

An integration that adds to every job's status (the gang scheduler's
``podGroup``, Kueue's ``workload``) states its part once, as a
:class:`StatusPart`, beside its pure builders: the CRD generator merges the
part's schema into the status of every job kind, the integration writes its
field, and ``t9k describe`` shows it under its section with the part's own
lines. The parts are listed in :data:`t9k_operator.registry.PARTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


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
    """The ``t9k describe`` section it is shown under (``Scheduling``)."""
    lines: Callable[[Mapping[str, Any]], list[str]]
    """What ``t9k describe`` shows of the field's value, a line each."""
    absent: str = ""
    """What its section says when no part of the section is in the status ("" for
    nothing: then the section is left out)."""


SCHEDULING = "Scheduling"
"""The ``t9k describe`` section of the scheduling integrations' parts."""
DEFAULT_SCHEDULER = "default scheduler (no PodGroup, no Workload)"
"""What that section says when the job has neither part."""
