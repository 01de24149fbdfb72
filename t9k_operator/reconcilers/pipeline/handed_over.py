"""A job another controller runs: what this operator still does for it.

``spec.managedBy: kueue.x-k8s.io/multikueue`` hands a job to Kueue's
MultiKueue, which dispatches it to a worker cluster (where this operator runs
it like any job) and copies the worker's status onto this copy whole. Here
the operator builds no pod, Service, ConfigMap or Secret for it, writes no
status (that would fight the mirrored status) and counts it nowhere; an
Event says when its Workload cannot be made, or an integration's (Kueue's,
when a worker cluster stops holding the job). Each integration that is on
says what it does for such a job (``handed_over``): Kueue keeps the job's
Workload while the job is active and deletes it once the job has ended (by
the status the worker reported) or is paused, which stops the worker's copy.

When no integration takes the job (the operator runs without ``--kueue``, or
the job names no queue), nothing would ever run it: the job fails at once,
its Failed condition naming ``spec.managedBy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from t9k_operator.api.managed_by import MULTIKUEUE, handed_over
from t9k_operator.objects import Obj
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.pipeline import plan
from t9k_operator.reconcilers.pipeline.contract import Unavailable
from t9k_operator.reconcilers.pipeline.plan import KeyPair, Observed, Problem, Recorded, Seen, Steps

NOT_TAKEN = Problem(
    "InvalidSpec",
    f"spec.managedBy: {MULTIKUEUE} hands the job to Kueue's MultiKueue, which takes only a job "
    "that names a Kueue queue (the label kueue.x-k8s.io/queue-name) on a cluster whose "
    "operator runs with --kueue: nothing would run this one; resubmit it with a queue, or "
    "without spec.managedBy",
    fail=True,
)
"""Why a handed-over job that nothing takes fails."""


def assemble(obs: Observed, recorded: Recorded, key_pair: KeyPair) -> Steps:
    """The pass of any job: a handed-over job's (:func:`steps`), else the
    pipeline's own (:func:`~t9k_operator.reconcilers.pipeline.plan.assemble`)."""
    if not is_handed_over(obs):
        return plan.assemble(obs, recorded, key_pair)
    made = steps(obs, obs.seen)
    if made is not None:
        made.retry = bool(recorded.refused)
        return made
    return plan.assemble(obs, replace(recorded, problem=NOT_TAKEN), key_pair)


def is_handed_over(obs: Observed) -> bool:
    """Whether another controller runs the job (a spec that does not parse: no)."""
    return obs.job is not None and handed_over(obs.job.spec)


def steps(obs: Observed, seen: Sequence[Seen]) -> Steps | None:
    """The pass of a handed-over job: its integrations' actions alone; None
    when none of them takes it (it fails: :data:`NOT_TAKEN`)."""
    phase = (obs.stored.get("status") or {}).get("phase")
    ended = phase in engine.TERMINAL or obs.view.paused

    def template(type_: str) -> Obj:
        return obs.kind.role_pod(obs.job, type_)  # no Service here: none is built

    out = Steps(engine.Plan(), quiet=True)
    taken = False
    for s in seen:
        try:
            made = s.integration.handed_over(s.state, obs.view, template, ended)
        except Unavailable as exc:
            message = f"waiting to create {exc.what} ({exc.child}: {exc.message}); retrying"
            out.plan.events.append(("Warning", "FailedCreate", message))
            out.held = taken = True
            continue
        if made is not None:
            taken = True
            out.actions.extend(replace(a, by=s.integration.name) for a in made.actions)
            out.plan.events.extend(made.events)
    return out if taken else None
