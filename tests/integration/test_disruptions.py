"""Disruptions are not failures: a replica whose pod was evicted (by its
kubelet under node pressure, or through the Eviction API as ``kubectl
drain`` does) is recreated without counting against ``backoffLimit``,
whatever its restart policy, with an Event, and counted in
``status.disruptionCount``.

The Eviction API is the real API server's: it writes the pod's
``DisruptionTarget`` condition before deleting it, and KWOK keeps the pod
Terminating for its stop duration as a kubelet would. A node-pressure
eviction is written by the stand-in kubelet as kubelet's eviction manager
writes it (tests/integration/kubelet.py ``evict``).
"""

from __future__ import annotations

import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, pytorch_job, run_all
from tests.integration.kubelet import Kubelet

pytestmark = pytest.mark.usefixtures("operator")


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def test_a_replica_its_kubelet_evicted_is_recreated_uncounted_even_under_never(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    jobs.create(pytorch_job("ev", [("master", 1, "Never"), ("worker", 1, "Never")]))
    pods = jobs.wait_pods("ev", ["ev-master-0", "ev-worker-0"])
    run_all(kubelet, jobs, "ev", list(pods))
    old = pods["ev-worker-0"]["metadata"]["uid"]
    kubelet.evict(jobs.namespace, "ev-worker-0")
    jobs.wait_new_pod("ev", "ev-worker-0", old, 20)
    status = jobs.status("ev")
    assert status["phase"] != "Failed"
    assert (status["restartCount"], status["disruptionCount"]) == (0, 1)
    _, _, message = jobs.wait_event("ev", "Disrupted")
    assert message.startswith("Pod ev-worker-0 was disrupted on node ")
    assert "(TerminationByKubelet: The node was low on resource: memory." in message
    assert message.endswith("not counted against backoffLimit (disruption 1 of 10)")


def test_a_pod_evicted_through_the_eviction_api_is_recorded_and_recreated(
    jobs: Jobs, admin: KubeClient
) -> None:
    body = pytorch_job(
        "dr",
        [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s", "kwok.t9k.dev/stop-duration": "2s"},
    )
    jobs.create(body)
    jobs.wait_phase("dr", "Running", 30)
    old = jobs.pods("dr")["dr-worker-0"]["metadata"]["uid"]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "dr-worker-0", "namespace": jobs.namespace},
    }
    admin.request("POST", PODS.path(jobs.namespace, "dr-worker-0", "eviction"), body=eviction)
    _, _, message = jobs.wait_event("dr", "Disrupted")
    assert "(EvictionByEvictionAPI" in message
    jobs.wait_new_pod("dr", "dr-worker-0", old, 20)
    wait_for(lambda: jobs.status("dr").get("phase") == "Running", 30, "the job running again")
    status = jobs.status("dr")
    assert (status["restartCount"], status["disruptionCount"]) == (0, 1)
