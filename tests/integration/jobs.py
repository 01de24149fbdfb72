"""Helpers for job tests: submit jobs, read their status, find their pods, and
wait for a job to settle before checking that nothing went wrong."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from t9k_operator.api import pytorch
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import EVENTS, PODS
from tests.integration.cluster import wait_for
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.operator_process import OperatorProcess

PYTORCH = resource_of(pytorch.CRD)


def pytorch_job(
    name: str,
    specs: list[tuple[str, int, str]],
    *,
    manual: bool = True,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A PyTorchTrainingJob with replica specs (type, replicas, restartPolicy)."""
    notes = dict(MANUAL) if manual else {}
    notes.update(annotations or {})
    replica_specs = []
    for type_, n, policy in specs:
        replica_specs.append(
            {
                "type": type_,
                "replicas": n,
                "restartPolicy": policy,
                "template": {
                    "metadata": {"annotations": notes},
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "pytorch/pytorch:2.4.0",
                                "command": ["python"],
                                "args": ["train.py"],
                            }
                        ]
                    },
                },
            }
        )
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name},
        "spec": {"replicaSpecs": replica_specs, **copy.deepcopy(spec)},
    }


def with_containers(
    body: dict[str, Any], names: list[str], native_sidecars: list[str] | None = None
) -> dict[str, Any]:
    """``body`` with every replica's containers named ``names`` (the first is the
    template's training container when no container has the conventional name)
    and, optionally, native sidecars (init containers with restartPolicy Always)."""
    for rs in body["spec"]["replicaSpecs"]:
        spec = rs["template"]["spec"]
        first = spec["containers"][0]
        spec["containers"] = [
            {**first, "name": names[0]},
            *({"name": n, "image": "fluent/fluent-bit:3.2"} for n in names[1:]),
        ]
        if native_sidecars:
            spec["initContainers"] = [
                {"name": n, "image": "envoyproxy/envoy:v1.33", "restartPolicy": "Always"}
                for n in native_sidecars
            ]
    return body


def run_all(kubelet: Kubelet, jobs: Jobs, job: str, pods: list[str]) -> None:
    """Start ``pods`` as their kubelet would, and wait for ``job`` to be Running."""
    for p in pods:
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase(job, "Running")


def finish(kubelet: Kubelet, jobs: Jobs, job: str) -> None:
    """End every pod of ``job`` (manual pods, bound) with exit code 0 as their
    kubelet would report it: the test decides when a job's work is done,
    instead of waiting out a fixed KWOK run duration. A pod the operator
    deletes meanwhile (a finished ColossalAI launcher's workers) is skipped."""
    names = list(jobs.pods(job))
    assert names, f"{job} has no pods to finish"
    for name in names:
        try:
            kubelet.succeed(jobs.namespace, name)
        except NotFound:
            continue


QUIET_SECONDS = 3.0
"""How long a job and its pods stay unwritten before :func:`settled` takes
their state as the one the operator leaves them in."""


def in_phase(phase: str) -> Callable[[dict[str, Any]], bool]:
    """For :func:`settled`: the job's phase is ``phase``."""
    return lambda job: (job.get("status") or {}).get("phase") == phase


def settled(
    jobs: Jobs,
    name: str,
    what: str,
    holds: Callable[[dict[str, Any]], object],
    *,
    operator: OperatorProcess | None = None,
    quiet: float = QUIET_SECONDS,
    timeout: float = 60,
) -> dict[str, Any]:
    """The job ``name`` once it has settled: ``holds(job)`` is true (``what``
    says of what) and neither the job nor any of its pods (Terminating ones
    too) has been written for ``quiet`` seconds; with ``operator``, a
    reconcile of the job that began after ``holds`` first held has finished
    too (:meth:`Jobs.settle`), so a reconcile slow to come on a busy machine
    is not taken for quiet. A check that nothing went wrong (no restart
    counted, no phase Failed, no pod made twice) proves something only of a
    job in this state: made at the first poll, it passes before the operator
    has acted."""
    deadline = time.monotonic() + timeout
    wait_for(lambda: holds(jobs.get(name)), timeout, f"{name}: {what}")
    if operator is not None:
        jobs.settle(name, operator, timeout=max(deadline - time.monotonic(), 1))

    def snapshot() -> tuple[dict[str, Any], tuple[tuple[str, str], ...]]:
        job = jobs.get(name)
        pods = jobs.all_pods(name)
        versions = (
            ("", str(job["metadata"]["resourceVersion"])),
            *sorted((n, str(p["metadata"]["resourceVersion"])) for n, p in pods.items()),
        )
        return job, versions

    job, seen = snapshot()
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        job, now = snapshot()
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            if holds(job):
                return job
            raise AssertionError(f"{name} settled where it no longer holds that {what}: {job}")
    raise AssertionError(
        f"{name} never stayed unwritten for {quiet}s within {timeout}s (waiting for {what})"
    )


class Jobs:
    def __init__(self, client: KubeClient, namespace: str, resource: Resource = PYTORCH) -> None:
        self.client = client
        self.namespace = namespace
        self.resource = resource

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.client.create(self.resource, body, self.namespace)

    def get(self, name: str) -> dict[str, Any]:
        return self.client.get(self.resource, name, self.namespace)

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.get(name).get("status") or {})

    def patch_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.client.patch(self.resource, name, {"spec": spec}, self.namespace)

    def settle(self, name: str, operator: OperatorProcess, timeout: float = 20) -> None:
        """Wait until the operator has acted on everything it could see of the
        job now: a reconcile of it that began after now has finished (a job's
        reconciles never overlap, so every one before has too). Touches the
        job's annotations so that such a reconcile comes. A check that nothing
        happened (no pod deleted) is only proof after this."""
        key = f"{self.namespace}/{name}"
        before = operator.reconciles_of(key)
        touch = {"metadata": {"annotations": {"t9k.test/settle": str(time.monotonic_ns())}}}
        self.client.patch(self.resource, name, touch, self.namespace)
        wait_for(lambda: operator.reconciles_of(key) > before, timeout, f"a reconcile of {key}")

    def wait_phase(self, name: str, phase: str, timeout: float = 30) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            status = self.status(name)
            return status if status.get("phase") == phase else None

        try:
            result: dict[str, Any] = wait_for(reached, timeout, f"{name} phase {phase}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; status is {self.status(name)}") from None
        return result

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        for cond in self.status(name).get("conditions") or []:
            if cond["type"] == type_:
                return dict(cond)
        return None

    def pods(self, name: str) -> dict[str, dict[str, Any]]:
        """The job's pods by name, less those being deleted (Terminating)."""
        return {
            n: p
            for n, p in self.all_pods(name).items()
            if not p["metadata"].get("deletionTimestamp")
        }

    def all_pods(self, name: str) -> dict[str, dict[str, Any]]:
        """The job's pods by name, Terminating ones too."""
        items, _ = self.client.list_all(
            PODS, self.namespace, label_selector=f"t9k.dev/job-name={name}"
        )
        return {p["metadata"]["name"]: p for p in items}

    def wait_pods(self, name: str, names: list[str], timeout: float = 20) -> dict[str, Any]:
        def present() -> dict[str, Any] | None:
            pods = self.pods(name)
            return pods if sorted(pods) == sorted(names) else None

        try:
            result: dict[str, Any] = wait_for(present, timeout, f"pods {names}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; have {sorted(self.pods(name))}") from None
        return result

    def wait_new_pod(self, job: str, pod: str, old_uid: str, timeout: float = 20) -> dict[str, Any]:
        def replaced() -> dict[str, Any] | None:
            p = self.pods(job).get(pod)
            return p if p is not None and p["metadata"]["uid"] != old_uid else None

        result: dict[str, Any] = wait_for(replaced, timeout, f"{pod} recreated")
        return result

    def events(self, name: str) -> list[tuple[str, str, str]]:
        items, _ = self.client.list_all(EVENTS, self.namespace)
        return [
            (e["type"], e["reason"], e["message"])
            for e in items
            if e["involvedObject"]["name"] == name
        ]

    def wait_event(self, name: str, reason: str, timeout: float = 15) -> tuple[str, str, str]:
        def found() -> tuple[str, str, str] | None:
            return next((e for e in self.events(name) if e[1] == reason), None)

        result: tuple[str, str, str] = wait_for(found, timeout, f"event {reason} on {name}")
        return result

    def gone(self, name: str) -> bool:
        try:
            self.get(name)
            return False
        except NotFound:
            return True


PVS = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")


def provide_claims(jobs: Jobs, template: dict[str, Any]) -> None:
    """A statically bound PV and PVC for each claim the template names, as an
    administrator would provide (the local cluster has no provisioner)."""
    volumes = (template.get("spec") or {}).get("volumes") or []
    for vol in volumes:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pv = f"{jobs.namespace}-{claim}"
        jobs.client.create(
            PVS,
            {
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "manual",
                    "hostPath": {"path": f"/tmp/{pv}"},
                    "claimRef": {"namespace": jobs.namespace, "name": claim},
                },
            },
        )
        jobs.client.create(
            PVCS,
            {
                "metadata": {"name": claim},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "manual",
                    "volumeName": pv,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            jobs.namespace,
        )
    # Bound before use, as an administrator's claims are: a pod created while
    # its claim is still unbound is Unschedulable until the PV controller binds
    # it (at its next sync under load) and the scheduler retries it.
    for vol in volumes:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            wait_for(
                lambda c=claim: (
                    (jobs.client.get(PVCS, c, jobs.namespace).get("status") or {}).get("phase")
                    == "Bound"
                ),
                60,
                f"claim {claim} bound",
            )
