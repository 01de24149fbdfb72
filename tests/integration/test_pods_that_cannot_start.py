"""Pods that a kubelet cannot start: named in the job's Running condition and
an Event, and settled (failed at once when no wait cures the cause, else
after the start timeout).

The pods are placed by the real kube-scheduler; KWOK's ``pod-cannot-start``
stage (hack/kwok/stages.yaml) then reports them as kubelet reports a pod
whose containers it cannot start: Pending, each container waiting with
kubelet's reason and message (``kwok.t9k.dev/waiting-reason``).
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.kube import KubeClient
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, pytorch_job
from tests.kinds import kind_resource

pytestmark = pytest.mark.usefixtures("operator")

WAITING = "kwok.t9k.dev/waiting-reason"


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def cannot_start(name: str, reason: str, message: str = "", **job_notes: str) -> dict[str, Any]:
    notes = {WAITING: reason}
    if message:
        notes["kwok.t9k.dev/waiting-message"] = message
    body = pytorch_job(name, [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")], manual=False)
    body["spec"]["replicaSpecs"][1]["template"]["metadata"]["annotations"] = notes
    if job_notes:
        body["metadata"]["annotations"] = job_notes
    return body


def test_a_pod_that_cannot_pull_its_image_is_named_with_kubelets_reason(
    jobs: Jobs, cluster: Cluster
) -> None:
    jobs.create(cannot_start("pull", "ImagePullBackOff"))
    running = wait_for(
        lambda: (
            (c := jobs.condition("pull", "Running")) and c["reason"] == "ImagePullBackOff" and c
        ),
        30,
        "the Running condition naming kubelet's reason",
    )
    assert running["status"] == "False"
    assert running["message"] == (
        "Pod pull-worker-0 cannot start: container pytorch: ImagePullBackOff: "
        'Back-off pulling image "pytorch/pytorch:2.4.0"'
    )
    assert jobs.status("pull")["phase"] == "Pending"
    table = cluster.kubectl("get", "pytorchtrainingjob", "pull", "-n", jobs.namespace).stdout
    header, row = table.splitlines()
    assert row.split()[header.split().index("REASON")] == "ImagePullBackOff"
    event = jobs.wait_event("pull", "ImagePullBackOff")
    assert event[0] == "Warning" and event[2] == running["message"]


def test_an_image_kubelet_cannot_parse_fails_the_job_at_once(jobs: Jobs) -> None:
    jobs.create(cannot_start("bad", "InvalidImageName", 'couldn\'t parse image name "Py Torch"'))
    failed = jobs.wait_phase("bad", "Failed", 30)
    c = next(c for c in failed["conditions"] if c["type"] == "Failed")
    assert c["reason"] == "PodCannotStart"
    assert c["message"] == (
        "Pod bad-worker-0 cannot start: container pytorch: InvalidImageName: "
        'couldn\'t parse image name "Py Torch"; '
        "fix the image of container pytorch in the worker replicas' template"
    )
    # The Event follows the status write (the recorder sends it on its own thread).
    assert jobs.wait_event("bad", "PodCannotStart")[2] == c["message"]


def test_a_pod_not_started_within_the_jobs_start_timeout_fails_it(jobs: Jobs) -> None:
    jobs.create(
        cannot_start(
            "slow",
            "CreateContainerConfigError",
            'secret "creds" not found',
            **{"t9k.dev/pod-start-timeout-seconds": "3"},
        )
    )
    wait_for(
        lambda: (c := jobs.condition("slow", "Running")) and c["reason"] != "-" and c,
        30,
        "the job waiting on kubelet",
    )
    assert jobs.status("slow")["phase"] == "Pending"  # a Secret may yet be created
    failed = jobs.wait_phase("slow", "Failed", 30)
    c = next(c for c in failed["conditions"] if c["type"] == "Failed")
    assert c["reason"] == "PodCannotStart"
    assert c["message"].startswith("Pod slow-worker-0 did not start within 3s of its placement")
    assert c["message"].endswith(
        'container pytorch: CreateContainerConfigError: secret "creds" not found'
    )


def test_a_start_timeout_annotation_that_is_not_seconds_fails_the_job_naming_it(
    admin: KubeClient, namespace: str
) -> None:
    msjobs = Jobs(admin, namespace, kind_resource("MSJob"))
    role = {
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "mindspore", "image": "ms"}]}},
    }
    msjobs.create(
        {
            "apiVersion": "mindspore.gitee.com/v1",
            "kind": "MSJob",
            "metadata": {
                "name": "ms",
                "annotations": {"t9k.dev/pod-start-timeout-seconds": "ten minutes"},
            },
            "spec": {"msReplicaSpecs": {"Scheduler": role, "Worker": role}},
        }
    )

    def failed_condition() -> dict[str, Any] | None:
        conditions = msjobs.status("ms").get("t9kConditions") or []
        c = next((c for c in conditions if c["type"] == "Failed"), None)
        return c if c and c["status"] == "True" else None

    failed = wait_for(failed_condition, 30, "the MSJob failed")
    assert failed["reason"] == "InvalidSpec"
    assert "metadata.annotations[t9k.dev/pod-start-timeout-seconds]" in failed["message"]
    assert msjobs.pods("ms") == {}
