"""The ToyJob's children, pure: a worker's pod from the job's template."""

from __future__ import annotations

from t9k_operator.builders.common import NORMAL, KindFacts, PodMode, replica_pod
from t9k_operator.objects import Obj
from tests.toykind.api import WORKER, ToyJobObject

FACTS = KindFacts(training_containers=("toy",), debug_command=("sleep", "inf"))
"""The training container is the one named toy, else the first."""


def build_pod(job: ToyJobObject, index: int, mode: PodMode = NORMAL) -> Obj:
    """Worker ``index``'s pod: its template, with the operator's names and labels."""
    return replica_pod(
        job,
        job.spec.worker.template,
        WORKER,
        index,
        training_names=FACTS.training_containers,
        mode=mode,
        env={"TOY_WORKER_INDEX": str(index)},
    )
