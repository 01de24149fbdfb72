"""A job's plan with its integrations: observe, gate, plan, add their status.

Pure: the caches are read through :class:`~.contract.Caches`, the engine is
the one state machine, and each integration only adds gates to the job's
view and its parts to the status. The apply step and the tests plan through
:func:`plan` alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.view import Gate, JobView
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.integrations.contract import Caches, Integration, JobInput


@dataclass(frozen=True)
class Seen:
    """One integration's state for one job."""

    integration: Integration[Any]
    state: Any


def observe(
    integrations: Sequence[Integration[Any]], job: JobInput, caches: Caches
) -> tuple[JobView, tuple[Seen, ...]]:
    """Every integration's state for ``job``, in order; and the view they leave."""
    seen: list[Seen] = []
    view = job.view
    for integration in integrations:
        found = integration.observe(replace(job, view=view), caches)
        if found is not None:
            state, view = found
            seen.append(Seen(integration, state))
    return view, tuple(seen)


def gates(view: JobView, seen: Sequence[Seen]) -> tuple[Gate, ...]:
    """The gates the integrations put before the engine."""
    return tuple(g for s in seen if (g := s.integration.gate(s.state, view)) is not None)


def plan(
    kind: JobKind[Any],
    view: JobView,
    seen: Sequence[Seen],
    pods: engine.Pods,
    now: datetime,
    *,
    blocked: Sequence[Gate] = (),
    failed: tuple[str, str] | None = None,
) -> engine.Plan:
    """The engine's plan for the job behind its integrations' gates, with their
    parts of the status. ``blocked``: gates of the apply step's own (a child it
    could not create); ``failed``: (reason, message) that fail the job now."""
    gated = replace(view, gates=(*view.gates, *blocked, *gates(view, seen)))
    if failed is not None:
        gated = replace(gated, spec_error=failed[1], spec_error_reason=failed[0])
    out = engine.plan(kind, gated, pods, now)
    for s in seen:
        out.events.extend(s.integration.status(s.state, view, out.status))
    return out
