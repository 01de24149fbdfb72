"""Stops the engine asks about first: before a pass deletes a job's replicas
for a stop that is not the job's own (a pause, a gate that holds everything,
a restart of the whole job), every :class:`~.planning.StopGate` of the pass
is asked whether they may go now. The engine names no gate: an integration
gives one (checkpoint before a stop: ``integrations/checkpoint``)."""

from __future__ import annotations

from t9k_operator.reconcilers.engine.planning import Pass


def may_stop(p: Pass, reason: str) -> bool:
    """Whether the job's replicas may be deleted now for a stop of
    ``reason``: every gate is asked (each may hold it, and ask to be woken)."""
    answers = [gate.may_stop(p, reason) for gate in p.stops]
    return all(answers)


def resume_step(p: Pass) -> int | None:
    """The step new pods resume from: the first gate's that has one."""
    for gate in p.stops:
        step = gate.resume_step(p)
        if step is not None:
            return step
    return None
