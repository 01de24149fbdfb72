"""A job's status is written only when the write would change it: the API
server fills the CRD's defaults into every status the operator writes, so a
pass whose status lacks only those (at their defaults) writes nothing."""

from __future__ import annotations

import pytest

from t9k_operator.kube import KubeClient
from tests.integration.jobs import Jobs, in_phase, pytorch_job, run_all, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess

pytestmark = pytest.mark.usefixtures("operator")


def status_writes(operator: OperatorProcess, key: str) -> int:
    """The status writes of ``key`` so far (the applier's "status" line, logged
    once the API server has taken the write)."""
    text = operator.log_path.read_text(errors="replace")
    return sum(
        1 for line in text.splitlines() if '"event": "status"' in line and f'"key": "{key}"' in line
    )


def test_a_settled_job_costs_no_status_write(
    admin: KubeClient, namespace: str, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(pytorch_job("quiet", [("worker", 2, "OnFailure")]))
    pods = jobs.wait_pods("quiet", ["quiet-worker-0", "quiet-worker-1"])
    run_all(kubelet, jobs, "quiet", list(pods))
    job = settled(jobs, "quiet", "Running", in_phase("Running"), operator=operator)
    # The operator leaves out what is at its default; the API server stored it.
    assert job["status"]["disruptionCount"] == 0 and job["status"]["restarts"] == []
    key = f"{namespace}/quiet"
    before = status_writes(operator, key)
    assert before >= 2, "the first status and Running were written"
    for _ in range(3):
        jobs.settle("quiet", operator)  # a reconcile of the settled job
    assert status_writes(operator, key) == before
