"""``spec.managedBy``: a job handed to another controller, Kueue's MultiKueue.

Every job kind has the field Kueue's MultiKueue reads to dispatch a custom
job to a worker cluster: ``spec.managedBy: kueue.x-k8s.io/multikueue``. On
the cluster where it is set (MultiKueue's manager) the operator queues the
job (its Workload) and does nothing else: no pods, no Services, no status of
its own, since MultiKueue copies the worker's status onto it whole. On the
worker, MultiKueue creates the job without the field, and the operator runs
it like any other.

The only value is MultiKueue's (an unknown controller would leave the job run
by nobody, so it is refused at admission), and the field cannot be set,
changed or removed after creation, as with the Kubernetes Job's
``spec.managedBy``: a job half run by each side is what it prevents.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from t9k_operator.api.rules import Rule

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
"""The value by which Kueue's MultiKueue takes a job (its controller name)."""

ManagedBy = Literal["kueue.x-k8s.io/multikueue"]

MSG_MANAGED_BY_IMMUTABLE = "spec.managedBy cannot be set, changed or removed after creation"
MANAGED_BY_IMMUTABLE_RULE: Rule[Any] = Rule(
    "has(self.spec.managedBy) == has(oldSelf.spec.managedBy) && "
    "(!has(self.spec.managedBy) || self.spec.managedBy == oldSelf.spec.managedBy)",
    MSG_MANAGED_BY_IMMUTABLE,
    None,  # a transition rule: only the API server sees the old object
    field_path=".spec.managedBy",
)
"""On the job's root: the field's own rule would not run when it is added or removed."""


def managed_by_field() -> Any:
    """``spec.managedBy`` of every job kind."""
    return Field(
        default=None,
        description=(
            "The controller that runs the job instead of this operator: only "
            f"{MULTIKUEUE} (Kueue's MultiKueue, which dispatches the job to a worker "
            "cluster and copies the worker's status here; the job must name a Kueue queue "
            "and the operator run with --kueue). Unset: the operator runs it. Cannot be "
            "changed after creation."
        ),
    )


def handed_over(spec: Any) -> bool:
    """Whether a parsed job spec hands the job to MultiKueue."""
    return getattr(spec, "managed_by", None) == MULTIKUEUE
