"""The fields and rules of a ``spec.replicaSpecs`` list of typed replica entries.

PyTorchTrainingJob, TensorFlowTrainingJob, XGBoostTrainingJob and GenericJob
list their replicas as entries each with a ``type`` and a ``replicas`` count.
This module holds what they declare and check alike: the ``replicas`` and
``restartPolicy`` fields of an entry, and the rules on the list (each type
once, at most one replica of a leading type, not too many replicas in all),
each as a CEL rule for the API server with its Python twin.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import Field

from t9k_operator.api.crd import ReplicaCount
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_REPLICAS, MSG_TOO_MANY_REPLICAS

MSG_DISTINCT_TYPES = "each type may appear only once in spec.replicaSpecs"


def replica_count_field() -> Any:
    """``replicas`` of a ``spec.replicaSpecs`` entry: 1 unless set."""
    return Field(default=1, ge=0, le=MAX_REPLICAS, description="Number of replicas of this type.")


def restart_policy_field() -> Any:
    """``restartPolicy`` of a ``spec.replicaSpecs`` entry: OnFailure unless set."""
    return Field(
        default="OnFailure",
        description=(
            "When the operator recreates a failed replica (pods themselves always run with "
            "restartPolicy Never): Never, OnFailure, Always, or ExitCode (only after exit "
            "codes 130, 137, 138 and 143). Restarts are limited by spec.runPolicy.backoffLimit."
        ),
    )


def replicas_of(specs: Iterable[ReplicaCount], *types: str) -> int:
    """The replicas of ``specs`` (of the given types, if any) in all."""
    return sum(r.replicas for r in specs if not types or r.type in types)


DISTINCT_TYPES_RULE: Rule[Sequence[ReplicaCount]] = Rule(
    "self.all(a, self.exists_one(b, b.type == a.type))",
    MSG_DISTINCT_TYPES,
    lambda specs: len({r.type for r in specs}) == len(specs),
)
TOO_MANY_REPLICAS_RULE: Rule[Sequence[ReplicaCount]] = Rule(
    f"self.map(r, has(r.replicas) ? r.replicas : 1).sum() <= {MAX_REPLICAS}",
    MSG_TOO_MANY_REPLICAS,
    lambda specs: replicas_of(specs) <= MAX_REPLICAS,
)


def at_most_one_rule(replica_type: str, message: str) -> Rule[Sequence[ReplicaCount]]:
    """The rule that ``spec.replicaSpecs`` holds at most one replica of ``replica_type``
    in all (the job's one master or chief)."""
    return Rule(
        f"self.filter(r, r.type == '{replica_type}')"
        ".map(r, has(r.replicas) ? r.replicas : 1).sum() <= 1",
        message,
        lambda specs: replicas_of(specs, replica_type) <= 1,
    )
