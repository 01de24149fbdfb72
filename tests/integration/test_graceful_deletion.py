"""Restart, pause/resume, scale-down and cleanup while the old pods are still
Terminating.

A real kubelet takes a deleted pod's name away only once its containers have
stopped, up to the pod's grace period (30 s by default; a training image
checkpointing on SIGTERM takes its time). The local cluster's KWOK stages do
the same for a pod still running: it stays Terminating for
``kwok.t9k.dev/stop-duration`` (hack/third_party/kwok/stages.yaml), here :data:`STOP`.
Each test samples the job's pods every 0.1 s throughout and checks that no
replica ever had two pods, that the replacement came once the name was free
(and not much later), and that the operator never counted an error.

A pod's training process killed by the SIGTERM of its deletion exits 143, and
the kubelet reports the pod Failed while it is still being deleted: such a pod
is never charged to ``backoffLimit``, whatever deleted it (pause, a restart of
the whole job, cleanup; Kueue's preemption in test_kueue_jobs). KWOK removes a
deleted pod at once when it has ended, so a test that reports it Failed holds
it with a finalizer of its own (:func:`hold`) until the job has settled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from t9k_operator.kube import NotFound
from t9k_operator.resources import PODS
from tests.integration.cluster import in_background, wait_for
from tests.integration.jobs import (
    Jobs,
    in_phase,
    pytorch_job,
    run_all,
    settled,
    with_containers,
)
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess

STOP_SECONDS = 4
STOP = {"kwok.t9k.dev/stop-duration": f"{STOP_SECONDS}s"}
SIDECAR = "log-shipper"
HOLD = "t9k.test/hold"
SIGTERM_EXIT = 143


@pytest.fixture
def jobs(admin: Any, namespace: str) -> Iterator[Jobs]:
    j = Jobs(admin, namespace)
    yield j
    release(j)  # a test that failed holding pods leaves none behind


@dataclass
class Samples:
    """What the job's pods were at each sample: (time, {name: (uid, terminating)})."""

    seen: list[tuple[float, dict[str, tuple[str, bool]]]] = field(default_factory=list)

    def gone_at(self, name: str, uid: str) -> float:
        """When the pod ``name`` of ``uid`` was first seen gone."""
        present = False
        for t, pods in self.seen:
            if pods.get(name, ("", False))[0] == uid:
                present = True
            elif present:
                return t
        raise AssertionError(f"{name} ({uid}) never seen, or never seen gone")

    def created_at(self, name: str, old_uid: str) -> tuple[float, str]:
        """When a pod ``name`` other than ``old_uid`` was first seen, and its uid."""
        for t, pods in self.seen:
            uid = pods.get(name, ("", False))[0]
            if uid and uid != old_uid:
                return t, uid
        raise AssertionError(f"no new {name} seen")

    def terminating(self, name: str, uid: str) -> bool:
        return any(pods.get(name) == (uid, True) for _, pods in self.seen)

    def most_live(self) -> int:
        return max((sum(not term for _, term in p.values()) for _, p in self.seen), default=0)


@contextmanager
def sampling(jobs: Jobs, job: str) -> Iterator[Samples]:
    """Samples of the job's pods every 0.1 s through the block, and one more
    after it (so what the block waited for is in the record even when the
    machine is busy and the sampler's last read came before it); an error of
    the sampler's fails the test instead of ending the record early."""
    samples = Samples()
    stop = threading.Event()
    failed: list[BaseException] = []

    def sample() -> None:
        pods = jobs.all_pods(job)
        samples.seen.append(
            (
                time.monotonic(),
                {
                    n: (p["metadata"]["uid"], bool(p["metadata"].get("deletionTimestamp")))
                    for n, p in pods.items()
                },
            )
        )

    def loop() -> None:
        try:
            while not stop.is_set():
                sample()
                stop.wait(0.1)
        except Exception as exc:  # reported when the block ends
            failed.append(exc)

    with in_background(loop, stop.set):
        yield samples
    if failed:
        raise AssertionError(f"the sampler failed: {failed[0]!r}")
    sample()


def wait_terminating(jobs: Jobs, job: str) -> None:
    """Every pod of ``job`` is being deleted (and some pod is left)."""
    wait_for(
        lambda: (
            (pods := jobs.all_pods(job))
            and all(p["metadata"].get("deletionTimestamp") for p in pods.values())
        ),
        10,
        f"every pod of {job} Terminating",
    )


def errors(operator: OperatorProcess, jobs: Jobs) -> list[str]:
    """The operator's failed reconciles of this test's jobs, from its log (the
    operator serves every test, and its error counter counts them all)."""
    return [
        line
        for line in operator.log_path.read_text(errors="replace").splitlines()
        if '"reconcile failed"' in line and f'"key": "{jobs.namespace}/' in line
    ]


def hold(jobs: Jobs, job: str) -> None:
    """Every pod of ``job`` kept, once deleted, until :func:`release`: a pod
    reported Failed while Terminating stays for the operator to see."""
    for name in jobs.all_pods(job):
        jobs.client.patch(PODS, name, {"metadata": {"finalizers": [HOLD]}}, jobs.namespace)


def release(jobs: Jobs, job: str | None = None) -> None:
    """The pods :func:`hold` kept, of ``job`` (None: of every job in the namespace)."""
    if job is None:
        pods = {p["metadata"]["name"]: p for p in jobs.client.list_all(PODS, jobs.namespace)[0]}
    else:
        pods = jobs.all_pods(job)
    for name, pod in pods.items():
        if HOLD in (pod["metadata"].get("finalizers") or []):
            try:
                jobs.client.patch(PODS, name, {"metadata": {"finalizers": None}}, jobs.namespace)
            except NotFound:
                continue


def killed_by_sigterm(kubelet: Kubelet, jobs: Jobs, job: str) -> list[str]:
    """Every pod of ``job`` being deleted that still runs reported as its
    kubelet reports one whose process the SIGTERM ended: Failed, exit code
    143. The pods so reported."""
    killed = []
    for name, pod in sorted(jobs.all_pods(job).items()):
        if pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get(
            "phase"
        ) not in ("Succeeded", "Failed"):
            kubelet.fail(jobs.namespace, name, exit_code=SIGTERM_EXIT)
            killed.append(name)
    return killed


def replaced_promptly(samples: Samples, name: str, old_uid: str) -> str:
    """The replacement of ``name`` came after the old pod had gone, within a
    few seconds (the operator reacts to the deletion's event); its uid."""
    gone = samples.gone_at(name, old_uid)
    created, uid = samples.created_at(name, old_uid)
    assert created >= gone, f"{name} was replaced while the old pod was still there"
    assert created - gone < 5, f"{name} was replaced {created - gone:.1f} s after its name was free"
    return uid


def test_a_restart_waits_for_the_terminating_pod_and_counts_once(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    # The training container fails while a sidecar runs on: the pod is still
    # running when the operator deletes it, so it stays Terminating a while.
    body = with_containers(
        pytorch_job("gr", [("worker", 2, "OnFailure")], annotations=STOP), ["pytorch", SIDECAR]
    )
    jobs.create(body)
    pods = jobs.wait_pods("gr", ["gr-worker-0", "gr-worker-1"])
    run_all(kubelet, jobs, "gr", list(pods))
    old = pods["gr-worker-1"]["metadata"]["uid"]
    with sampling(jobs, "gr") as samples:
        kubelet.fail(jobs.namespace, "gr-worker-1", exit_code=1, running=[SIDECAR])
        new = jobs.wait_new_pod("gr", "gr-worker-1", old, timeout=STOP_SECONDS + 20)
        kubelet.run(jobs.namespace, "gr-worker-1")
        status = settled(jobs, "gr", "phase Running", in_phase("Running"), operator=operator)
    assert samples.terminating("gr-worker-1", old), "the old pod was never seen Terminating"
    assert replaced_promptly(samples, "gr-worker-1", old) == new["metadata"]["uid"]
    assert samples.most_live() <= 2
    assert status["status"]["restartCount"] == 1
    assert [e[1] for e in jobs.events("gr")].count("Restarting") == 1
    assert not errors(operator, jobs)


def test_pause_and_resume_while_the_pods_are_terminating(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    jobs.create(pytorch_job("gp", [("worker", 2, "OnFailure")], annotations=STOP))
    pods = jobs.wait_pods("gp", ["gp-worker-0", "gp-worker-1"])
    run_all(kubelet, jobs, "gp", list(pods))
    with sampling(jobs, "gp") as samples:
        jobs.patch_spec("gp", {"runMode": {"pause": {"enabled": True}}})
        jobs.wait_phase("gp", "Paused")
        # Resumed before the paused pods are gone: the new ones wait for the names.
        wait_terminating(jobs, "gp")
        assert set(jobs.all_pods("gp")) == {"gp-worker-0", "gp-worker-1"}
        jobs.patch_spec("gp", {"runMode": {"pause": {"enabled": False}}})
        for name in ("gp-worker-0", "gp-worker-1"):
            jobs.wait_new_pod("gp", name, pods[name]["metadata"]["uid"], timeout=STOP_SECONDS + 20)
        run_all(kubelet, jobs, "gp", ["gp-worker-0", "gp-worker-1"])
        status = settled(jobs, "gp", "phase Running", in_phase("Running"), operator=operator)
    for name in ("gp-worker-0", "gp-worker-1"):
        replaced_promptly(samples, name, pods[name]["metadata"]["uid"])
    assert samples.most_live() <= 2
    assert status["status"]["restartCount"] == 0
    assert not errors(operator, jobs)


def test_scale_down_then_up_while_a_pod_is_terminating(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    jobs.create(
        pytorch_job(
            "gs",
            [("node", 3, "ExitCode")],
            annotations=STOP,
            torchrunConfig={"enabled": True},
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 3},
        )
    )
    pods = jobs.wait_pods("gs", ["gs-node-0", "gs-node-1", "gs-node-2"])
    run_all(kubelet, jobs, "gs", list(pods))
    old = pods["gs-node-2"]["metadata"]["uid"]
    with sampling(jobs, "gs") as samples:
        jobs.patch_spec("gs", {"elastic": {"expectedReplicas": 2}})
        wait_for(
            lambda: (
                (jobs.all_pods("gs").get("gs-node-2") or {})
                .get("metadata", {})
                .get("deletionTimestamp")
            ),
            10,
            "gs-node-2 Terminating",
        )
        # Wanted again before it has gone: it comes back once its name is free.
        jobs.patch_spec("gs", {"elastic": {"expectedReplicas": 3}})
        jobs.wait_new_pod("gs", "gs-node-2", old, timeout=STOP_SECONDS + 20)
        kubelet.run(jobs.namespace, "gs-node-2")
        status = settled(
            jobs,
            "gs",
            "three replicas running",
            lambda j: (
                (j.get("status") or {}).get("phase") == "Running"
                and sorted(jobs.pods("gs")) == ["gs-node-0", "gs-node-1", "gs-node-2"]
            ),
            operator=operator,
        )
    replaced_promptly(samples, "gs-node-2", old)
    assert samples.most_live() <= 3
    assert status["status"]["restartCount"] == 0
    assert not errors(operator, jobs)


def test_cleanup_of_a_finished_job_while_its_pods_terminate(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    body = with_containers(
        pytorch_job(
            "gc",
            [("master", 1, "Never"), ("worker", 2, "Never")],
            annotations=STOP,
            runPolicy={"cleanUpPolicy": "All"},
        ),
        ["pytorch", SIDECAR],
    )
    jobs.create(body)
    pods = jobs.wait_pods("gc", ["gc-master-0", "gc-worker-0", "gc-worker-1"])
    run_all(kubelet, jobs, "gc", list(pods))
    with sampling(jobs, "gc") as samples:
        kubelet.succeed(jobs.namespace, "gc-master-0", running=[SIDECAR])
        jobs.wait_phase("gc", "Succeeded")
        wait_terminating(jobs, "gc")
        wait_for(lambda: not jobs.all_pods("gc"), STOP_SECONDS + 20, "every pod gone")
        # A reconcile after the last pod went would recreate nothing.
        settled(jobs, "gc", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    for name, pod in pods.items():
        assert samples.terminating(name, pod["metadata"]["uid"]), f"{name} never Terminating"
    assert not any(
        uid != pods[name]["metadata"]["uid"]
        for _, seen in samples.seen
        for name, (uid, _) in seen.items()
    ), "a pod was created after the job finished"
    assert jobs.status("gc")["phase"] == "Succeeded"
    assert not errors(operator, jobs)


def start_held(jobs: Jobs, kubelet: Kubelet, body: dict[str, Any]) -> dict[str, Any]:
    """``body``'s job created, its pods running and held (:func:`hold`)."""
    name = body["metadata"]["name"]
    jobs.create(body)
    wanted = [
        f"{name}-{rs['type']}-{i}"
        for rs in body["spec"]["replicaSpecs"]
        for i in range(rs["replicas"])
    ]
    pods = jobs.wait_pods(name, wanted)
    run_all(kubelet, jobs, name, list(pods))
    hold(jobs, name)
    return pods


def restarting(jobs: Jobs, job: str) -> int:
    return [e[1] for e in jobs.events(job)].count("Restarting")


def uncharged(
    jobs: Jobs, job: str, operator: OperatorProcess, phase: str, restarts: int
) -> dict[str, Any]:
    """The job, settled in ``phase`` with its pods reported killed by SIGTERM,
    charged ``restarts`` restarts and no more (and never failed)."""
    status = settled(jobs, job, f"phase {phase}", in_phase(phase), operator=operator)["status"]
    assert status["restartCount"] == restarts, status
    assert len([r for r in status.get("restarts") or [] if r["counted"]]) == restarts, status
    assert restarting(jobs, job) == restarts, jobs.events(job)
    assert (jobs.condition(job, "Failed") or {}).get("status") != "True", status
    assert not errors(operator, jobs)
    return dict(status)


def test_pods_killed_by_sigterm_in_a_pause_are_not_charged_on_resume(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    pods = start_held(
        jobs, kubelet, pytorch_job("kp", [("worker", 2, "OnFailure")], annotations=STOP)
    )
    jobs.patch_spec("kp", {"runMode": {"pause": {"enabled": True}}})
    wait_terminating(jobs, "kp")
    assert killed_by_sigterm(kubelet, jobs, "kp") == ["kp-worker-0", "kp-worker-1"]
    uncharged(jobs, "kp", operator, "Paused", 0)
    # Resumed while the killed pods are still there: the restart rule sees them
    # (a paused job's pass ends before it). Charged, each 143 would be a
    # restart (OnFailure) and an Event.
    jobs.patch_spec("kp", {"runMode": {"pause": {"enabled": False}}})
    uncharged(jobs, "kp", operator, "Resuming", 0)
    release(jobs, "kp")
    for name, pod in pods.items():
        jobs.wait_new_pod("kp", name, pod["metadata"]["uid"], timeout=STOP_SECONDS + 20)
    run_all(kubelet, jobs, "kp", list(pods))
    uncharged(jobs, "kp", operator, "Running", 0)


def test_peers_killed_by_sigterm_in_a_restart_of_the_whole_job_count_once(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    body = pytorch_job(
        "kr",
        [("master", 1, "OnFailure"), ("worker", 2, "OnFailure")],
        annotations=STOP,
        runPolicy={"restartScope": "Job", "backoffLimit": 5},
    )
    pods = start_held(jobs, kubelet, body)
    kubelet.fail(jobs.namespace, "kr-worker-1", exit_code=1)
    wait_terminating(jobs, "kr")
    assert killed_by_sigterm(kubelet, jobs, "kr") == ["kr-master-0", "kr-worker-0"]
    # The failure is the attempt's one count; a peer's 143 counted too would
    # make it 2 or 3, or (at the Terminating pods' names) a second attempt.
    settled(
        jobs,
        "kr",
        "the failure counted",
        lambda j: (j.get("status") or {}).get("restartCount") == 1,
        operator=operator,
    )
    assert restarting(jobs, "kr") == 1
    release(jobs, "kr")
    for name, pod in pods.items():
        jobs.wait_new_pod("kr", name, pod["metadata"]["uid"], timeout=STOP_SECONDS + 20)
    run_all(kubelet, jobs, "kr", list(pods))
    status = uncharged(jobs, "kr", operator, "Running", 1)
    assert [r["replica"] for r in status["restarts"] if r["counted"]] == ["kr-worker-1"]


def test_pods_killed_by_sigterm_in_cleanup_leave_the_job_succeeded(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    body = pytorch_job(
        "kc",
        [("master", 1, "Never"), ("worker", 2, "Never")],
        annotations=STOP,
        runPolicy={"cleanUpPolicy": "All"},
    )
    start_held(jobs, kubelet, body)
    kubelet.succeed(jobs.namespace, "kc-master-0")
    jobs.wait_phase("kc", "Succeeded")
    wait_terminating(jobs, "kc")
    # Workers with restartPolicy Never: were a 143 taken as their failure, the
    # job would turn Failed.
    assert killed_by_sigterm(kubelet, jobs, "kc") == ["kc-worker-0", "kc-worker-1"]
    uncharged(jobs, "kc", operator, "Succeeded", 0)
    release(jobs, "kc")
    wait_for(lambda: not jobs.all_pods("kc"), STOP_SECONDS + 20, "every pod gone")
    uncharged(jobs, "kc", operator, "Succeeded", 0)
