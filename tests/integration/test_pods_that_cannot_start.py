"""Pods that a kubelet cannot start: named in the job's Running condition and
an Event, and settled (failed at once when no wait cures the cause, else
after the start timeout); and a container the OOM killer ends.

The pods are placed by the real kube-scheduler; KWOK's stages
(hack/third_party/kwok/stages.yaml) then report them as kubelet reports a pod whose
containers it cannot start: Pending, each container waiting with kubelet's
reason and message (``kwok.t9k.dev/waiting-reason``), a failing pull
alternating ``ErrImagePull`` and ``ImagePullBackOff``. Volumes that cannot
mount and OOM kills under a restart policy are played by the test's kubelet
stand-in (tests/integration/kubelet.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.objects import parse_time
from t9k_operator.resources import PODS, SECRETS
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.kubelet import Kubelet
from tests.kinds import kind_resource

pytestmark = pytest.mark.usefixtures("operator")

WAITING = "kwok.t9k.dev/waiting-reason"


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def cannot_start(
    name: str, reason: str, message: str = "", *, pull_backoff: str = "", **job_notes: str
) -> dict[str, Any]:
    notes = {WAITING: reason}
    if message:
        notes["kwok.t9k.dev/waiting-message"] = message
    if pull_backoff:
        notes["kwok.t9k.dev/pull-backoff"] = pull_backoff
    body = pytorch_job(name, [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")], manual=False)
    body["spec"]["replicaSpecs"][1]["template"]["metadata"]["annotations"] = notes
    # The master runs on meanwhile (a master that completes would complete the job).
    master = body["spec"]["replicaSpecs"][0]["template"]["metadata"]
    master["annotations"] = {"kwok.t9k.dev/run-duration": "10m"}
    if job_notes:
        body["metadata"]["annotations"] = job_notes
    return body


def test_a_failing_pull_is_named_steadily_while_kubelet_alternates_its_reason(
    jobs: Jobs, cluster: Cluster
) -> None:
    """Kubelet alternates ErrImagePull (with the pull error) and
    ImagePullBackOff (only "Back-off pulling image") for as long as the pull
    fails. The job names the pull error throughout: one reason, one message,
    one Event; the start timeout runs from the placement, whatever kubelet
    says meanwhile, and nothing is counted against the backoff limit."""
    error = 'failed to pull and unpack image "pytorch/pytorch:2.4.0": pull access denied'
    jobs.create(
        cannot_start(
            "pull",
            "ErrImagePull",
            error,
            **{"t9k.dev/pod-start-timeout-seconds": "8"},
            pull_backoff="1s",
        )
    )
    expected = f"Pod pull-worker-0 cannot start: container pytorch: ErrImagePull: {error}"
    said: set[tuple[str, str]] = set()  # the job's Running condition while Pending
    kubelet_said: set[str] = set()  # the pod's container's reasons meanwhile
    columns: set[str] = set()
    node = placed = ""
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        status = jobs.status("pull")
        if status.get("phase") in ("Failed", "Succeeded"):
            break
        running = jobs.condition("pull", "Running")
        if (
            running
            and running["reason"] not in ("", "-", "None")
            and "cannot start" in str(running.get("message"))
        ):
            said.add((running["reason"], running["message"]))
        pod = jobs.pods("pull").get("pull-worker-0") or {}
        for c in (pod.get("status") or {}).get("containerStatuses") or []:
            kubelet_said.add(str((c["state"].get("waiting") or {}).get("reason")))
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c["type"] == "PodScheduled":
                node, placed = pod["spec"]["nodeName"], c["lastTransitionTime"]
        if len(kubelet_said) == 2 and len(columns) < 3:
            table = cluster.kubectl("get", "pytorchtrainingjob", "pull", "-n", jobs.namespace)
            header, row = table.stdout.splitlines()
            cells = dict(zip(header.split(), row.split(), strict=False))
            if cells["PHASE"] == "Pending":
                columns.add(cells["REASON"])
        time.sleep(0.2)
    assert kubelet_said == {"ErrImagePull", "ImagePullBackOff"}
    assert said == {("ErrImagePull", expected)}
    assert columns == {"ErrImagePull"}
    status = jobs.status("pull")
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert (status["phase"], failed["reason"]) == ("Failed", "PodCannotStart")
    assert failed["message"] == (
        f"Pod pull-worker-0 did not start within 8s of its placement on node {node}: "
        f"container pytorch: ErrImagePull: {error}"
    )
    # Not restarted by kubelet's writes: failed 8s after the placement.
    took = parse_time(failed["lastTransitionTime"]) - parse_time(placed)  # type: ignore[operator]
    assert 8 <= took.total_seconds() < 14, took
    assert status.get("restartCount", 0) == 0 and not status.get("restarts")
    pulls = [e for e in jobs.events("pull") if e[1] in ("ErrImagePull", "ImagePullBackOff")]
    assert pulls == [("Warning", "ErrImagePull", expected)]


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


def with_volume(body: dict[str, Any], type_index: int, volume: dict[str, Any]) -> dict[str, Any]:
    spec = body["spec"]["replicaSpecs"][type_index]["template"]["spec"]
    spec["volumes"] = [volume]
    spec["containers"][0]["volumeMounts"] = [{"name": volume["name"], "mountPath": "/etc/cfg"}]
    return body


def test_a_volume_that_cannot_mount_fails_the_job_at_its_start_timeout(
    jobs: Jobs, kubelet: Kubelet, admin: KubeClient
) -> None:
    """Kubelet keeps a pod whose ConfigMap volume names a missing ConfigMap
    Pending, its containers waiting ContainerCreating (a normal start, no
    reason of their own), and says why only in a FailedMount Event on the pod.
    The operator does not read Events: the job waits as for any pod being
    created, and at the start timeout fails naming the pod and where kubelet
    says why."""
    body = pytorch_job("mount", [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")])
    body["metadata"]["annotations"] = {"t9k.dev/pod-start-timeout-seconds": "4"}
    jobs.create(with_volume(body, 1, {"name": "cfg", "configMap": {"name": "settings"}}))
    jobs.wait_pods("mount", ["mount-master-0", "mount-worker-0"])
    assert kubelet.start(jobs.namespace, "mount-master-0")
    assert not kubelet.start(jobs.namespace, "mount-worker-0")
    pod = admin.get(PODS, "mount-worker-0", jobs.namespace)
    assert pod["status"]["phase"] == "Pending"
    assert [c["state"] for c in pod["status"]["containerStatuses"]] == [
        {"waiting": {"reason": "ContainerCreating"}}
    ]
    assert (
        "Warning",
        "FailedMount",
        'MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found',
    ) in jobs.events("mount-worker-0")
    running = wait_for(
        lambda: (c := jobs.condition("mount", "Running")) and c["status"] == "False" and c,
        20,
        "the job waiting for its replicas",
    )
    assert (running["reason"], running["message"]) == ("-", "Waiting for replicas to start.")
    assert jobs.status("mount")["phase"] == "Pending"
    failed = jobs.wait_phase("mount", "Failed", 30)
    c = next(c for c in failed["conditions"] if c["type"] == "Failed")
    node = pod["spec"]["nodeName"]
    assert (c["reason"], c["message"]) == (
        "PodCannotStart",
        f"Pod mount-worker-0 did not start within 4s of its placement on node {node}: "
        "its containers are still being created (kubectl describe pod mount-worker-0)",
    )


def test_an_optional_or_present_source_mounts(
    jobs: Jobs, kubelet: Kubelet, admin: KubeClient
) -> None:
    """The stand-in fails only what kubelet fails: a missing source marked
    optional mounts empty, and one that exists mounts."""
    admin.create(
        SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "present"}},
        jobs.namespace,
    )
    sources = [{"configMap": {"name": "absent", "optional": True}}, {"secret": {"name": "present"}}]
    body = pytorch_job("mounts", [("worker", 1, "OnFailure")])
    jobs.create(with_volume(body, 0, {"name": "cfg", "projected": {"sources": sources}}))
    jobs.wait_pods("mounts", ["mounts-worker-0"])
    assert kubelet.start(jobs.namespace, "mounts-worker-0")
    assert jobs.wait_phase("mounts", "Running", 20)


def test_an_oom_killed_replica_is_restarted_per_its_policy_and_named(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    jobs.create(pytorch_job("oom", [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")]))
    pods = jobs.wait_pods("oom", ["oom-master-0", "oom-worker-0"])
    for name in pods:
        kubelet.run(jobs.namespace, name)
    jobs.wait_phase("oom", "Running", 20)
    old = pods["oom-worker-0"]["metadata"]["uid"]
    kubelet.oom_kill(jobs.namespace, "oom-worker-0")
    jobs.wait_new_pod("oom", "oom-worker-0", old)
    restarts = wait_for(lambda: jobs.status("oom").get("restarts"), 20, "the restart recorded")
    assert [(r["replica"], r.get("exitCode"), r["reason"], r["counted"]) for r in restarts] == [
        ("oom-worker-0", 137, "OOMKilled", True)
    ]
    restarting = jobs.wait_event("oom", "Restarting")
    assert restarting[0] == "Warning" and restarting[2].startswith(
        "Restarting oom-worker-0 (exit code 137)"
    )


def test_an_oom_killed_replica_without_restarts_fails_the_job_naming_it(jobs: Jobs) -> None:
    notes = {"kwok.t9k.dev/exit-reason": "OOMKilled", "kwok.t9k.dev/run-duration": "1s"}
    body = pytorch_job("oomed", [("worker", 1, "Never")], manual=False, annotations=notes)
    jobs.create(body)
    failed = jobs.wait_phase("oomed", "Failed", 30)
    c = next(c for c in failed["conditions"] if c["type"] == "Failed")
    assert c["message"] == "pod oomed-worker-0 failed with exit code 137 (OOMKilled)"
