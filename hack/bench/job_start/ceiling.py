"""The ``ceiling`` scenario's pods: what the operator would create, made by
the bench itself."""

from __future__ import annotations

from typing import Any

from t9k_operator.kinds.contract import PodMode, read
from t9k_operator.kinds.pytorch import PyTorchKind

from .integrations import job_body


def ceiling_pods(jobs: int, replicas: int) -> list[dict[str, Any]]:
    """The pods the operator would create, built by its own builder, without
    owner references (the garbage collector would delete them)."""
    kind = PyTorchKind()
    out = []
    for j in range(jobs):
        stored = job_body(f"job-{j}", replicas)
        stored["metadata"].update(uid=f"00000000-0000-0000-0000-{j:012d}", generation=1)
        parsed = read(kind, stored)
        assert parsed.job is not None, parsed.view.spec_error
        for i in range(replicas):
            pod = kind.build_pod(parsed.job, "worker", i, PodMode(), {})
            pod["metadata"].pop("ownerReferences", None)
            out.append(pod)
    return out
