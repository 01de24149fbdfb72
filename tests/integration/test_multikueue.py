"""MultiKueue across three local clusters, with the real Kueue manager in each:
the session's cluster is the manager, two more (``<session>-worker-1`` and
``-worker-2``, each its own control plane with KWOK nodes, Kueue and this
operator under the ServiceAccount it ships with) are its workers.

``hack.cluster multikueue`` connects them as a user would (docs/scheduling.md):
on the manager a MultiKueueCluster per worker with a real kubeconfig Secret (a
worker ServiceAccount's token under the ClusterRole the install ships, the
worker's CA inline, as MultiKueue demands), a MultiKueueConfig and the
AdmissionCheck, every Kueue configured with the generated
``manifests/kueue-config/multikueue.json``; the test adds a ClusterQueue that
names the check. worker-1 has no GPU quota, worker-2 has. A job of each of
two kinds with ``spec.managedBy`` runs on worker-2 only, the manager's copy
has no pod and shows the worker's status; pausing the manager's job stops the
worker's and gives its quota back, resuming dispatches it again (the worker's
new copy waits for the previous one's pods and Workload to go), and deleting
it deletes the worker's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import NAMESPACES
from tests.integration.cluster import (
    ROOT,
    Cluster,
    delete_quietly,
    request_token,
    wait_for,
)
from tests.integration.cluster import admin as admin_client
from tests.integration.conftest import OPERATOR_NAMESPACE, OPERATOR_SA
from tests.integration.jobs import Jobs
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_cli import Run
from tests.integration.test_gang_jobs import gpu_job
from tests.integration.test_kueue_jobs import (
    CLUSTER_QUEUES,
    FLAVORS,
    KUEUE,
    KUEUE_VERSION,
    LOCAL_QUEUES,
    cluster_queue_body,
)
from tests.integration.test_kueue_jobs import kueue_ready as kueue_ready  # the fixture
from tests.integration.test_tensorboard_queue import gone
from tests.kinds import by_kind, kind_resource

pytestmark = pytest.mark.xdist_group("add-ons")

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
WORKERS = ("worker-1", "worker-2")
MK_CLUSTERS = Resource(
    KUEUE, KUEUE_VERSION, "multikueueclusters", "MultiKueueCluster", namespaced=False
)
WORKLOADS = Resource(KUEUE, KUEUE_VERSION, "workloads", "Workload")
KINDS = ("PyTorchTrainingJob", "MSJob")
COUNTED = "batch.tensorstack.dev/dispatch-disruptions"
"""The annotation of a manager's Workload counting the workers lost (docs/scheduling.md)."""


@dataclass
class Worker:
    name: str
    cluster: Cluster
    admin: KubeClient
    operator: OperatorProcess | None = None


@pytest.fixture(scope="module")
def workers(
    kueue_ready: None, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Worker]]:
    """The trio as ``hack.cluster multikueue`` (``make cluster CLUSTERS=3``) makes
    it, and on each worker a flavor, the ClusterQueue ``cq`` (worker-1 without
    GPU quota, worker-2 with 24 GPUs) and the operator with ``--kueue`` under
    the ServiceAccount it ships with."""
    clusters = {name: Cluster(f"{cluster.name}-{name}") for name in WORKERS}
    started: list[Worker] = []
    tmp = tmp_path_factory.mktemp("workers")
    try:
        cluster.command("multikueue")
        for name, c in clusters.items():
            c.up()  # running already: reads its state
            worker = Worker(name, c, admin_client(c))
            started.append(worker)
            c.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "scheduling"))
            c.wait_established("crd", "-l", "app.kubernetes.io/part-of=t9k-operator")
            worker.admin.create(
                FLAVORS,
                {
                    "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
                    "kind": "ResourceFlavor",
                    "metadata": {"name": "default-flavor"},
                },
            )
            gpus = 0 if name == "worker-1" else 24
            worker.admin.create(CLUSTER_QUEUES, cluster_queue_body("cq", "Never", gpus=gpus))
            token = request_token(worker.admin, OPERATOR_NAMESPACE, OPERATOR_SA)
            kubeconfig = c.token_kubeconfig(tmp / f"{name}-operator", token)
            log = tmp / f"{name}-operator.log"
            worker.operator = OperatorProcess(kubeconfig, log, "--kueue")
            worker.operator.wait_ready()
        yield {w.name: w for w in started}
    finally:
        for w in started:
            if w.operator is not None:
                w.operator.stop()
        for c in clusters.values():
            c.stop()


@pytest.fixture(scope="module")
def multikueue(workers: dict[str, Worker], admin: KubeClient) -> Iterator[str]:
    """The manager's ClusterQueue ``mk``, which names MultiKueue's check, once
    both MultiKueueClusters are Active."""

    def active() -> bool:
        for name in WORKERS:
            status = admin.get(MK_CLUSTERS, name).get("status") or {}
            if not any(
                c["type"] == "Active" and c["status"] == "True"
                for c in status.get("conditions") or []
            ):
                return False
        return True

    wait_for(active, 60, "both MultiKueueClusters Active")
    body = cluster_queue_body("mk", "Never", gpus=48)
    body["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "multikueue"}]}
    admin.create(CLUSTER_QUEUES, body)
    yield "mk"
    delete_quietly(admin, CLUSTER_QUEUES, "mk", None)


@pytest.fixture
def queue(
    multikueue: str, workers: dict[str, Worker], admin: KubeClient, namespace: str
) -> Iterator[str]:
    """LocalQueue ``team`` in the test's namespace, on the manager and both workers
    (MultiKueue creates the worker's copies in the namespace of the same name)."""
    local = {
        "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": "team"},
    }
    admin.create(LOCAL_QUEUES, {**local, "spec": {"clusterQueue": multikueue}}, namespace)
    for worker in workers.values():
        worker.admin.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        worker.admin.create(LOCAL_QUEUES, {**local, "spec": {"clusterQueue": "cq"}}, namespace)
    yield "team"
    for worker in workers.values():
        delete_quietly(worker.admin, NAMESPACES, namespace, None)


@pytest.fixture
def manager_operator(
    multikueue: str, start_operator: Callable[..., OperatorProcess]
) -> OperatorProcess:
    proc = start_operator("--kueue")
    proc.wait_ready()
    return proc


def handed_job(kind: str, name: str, queue: str) -> dict[str, Any]:
    job = gpu_job(kind, name, queue=queue, pods=2, run="600s")
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def phase(jobs: Jobs, name: str) -> str | None:
    """The job's phase; None while it does not exist."""
    try:
        return jobs.status(name).get("phase")
    except NotFound:
        return None


@pytest.mark.timeout(600)  # its failure message reads three clusters after a wait of 180 s
@pytest.mark.usefixtures("manager_operator")
@pytest.mark.parametrize("kind", KINDS)
def test_a_job_runs_on_the_worker_with_quota_and_its_status_comes_home(
    kind: str,
    queue: str,
    workers: dict[str, Worker],
    admin: KubeClient,
    namespace: str,
    cluster: Cluster,
) -> None:
    name, resource = "mk", kind_resource(kind)
    worker = workers["worker-2"].admin
    manager, there = Jobs(admin, namespace, resource), Jobs(worker, namespace, resource)
    manager.create(handed_job(kind, name, queue))
    wait_for(lambda: phase(there, name) == "Running", 120, f"{name} Running on worker-2")
    remote = worker.get(resource, name, namespace)
    assert "managedBy" not in remote["spec"], "MultiKueue hands the worker a job to run"
    labels = remote["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/multikueue-origin"]
    wl_name = labels["kueue.x-k8s.io/prebuilt-workload-name"]
    wl = worker.get(WORKLOADS, wl_name, namespace)
    assert wl["metadata"]["ownerReferences"][0]["uid"] == remote["metadata"]["uid"]
    assert len(there.pods(name)) == 2
    # The manager's copy shows the worker's status, and has no pod of its own.
    wait_for(lambda: phase(manager, name) == "Running", 60, "the status mirrored on the manager")
    assert manager.status(name)["tasks"] == there.status(name)["tasks"]
    assert manager.pods(name) == {}
    assert gone(workers["worker-1"].admin, resource, name, namespace)
    manager_wl = admin.get(WORKLOADS, wl_name, namespace)
    assert manager_wl["status"].get("clusterName") == "worker-2", manager_wl["status"]
    # t9k on the manager names the worker: in its list, its describe, and its
    # logs, which are there and not here.
    t9k = Run(cluster, namespace)
    listed = [row.split() for row in t9k.ok("list").splitlines()]
    assert listed[0][-1] == "CLUSTER" and [r[-1] for r in listed[1:]] == ["worker-2"], listed
    described = t9k.ok("describe", name)
    assert "\nCluster:     worker-2 (MultiKueue worker)\n" in described, described
    logs = t9k("logs", name)
    assert (logs.returncode, logs.stdout) == (1, ""), logs
    assert f"error: job {name} runs in worker cluster worker-2 " in logs.stderr, logs.stderr
    assert f"t9k logs {name} -n {namespace} --kubeconfig <worker-2's kubeconfig>" in logs.stderr

    if by_kind(kind).pausable:  # pausing the manager's job stops the worker's
        manager.patch_spec(name, {"runMode": {"pause": {"enabled": True}}})
        wait_for(lambda: gone(worker, resource, name, namespace), 90, "paused: gone on worker-2")
        wait_for(lambda: gone(admin, WORKLOADS, wl_name, namespace), 30, "paused: quota back")
        manager.patch_spec(name, {"runMode": {"pause": {"enabled": False}}})
        # The worker's new copy starts once the garbage collector there has taken
        # the previous copy's Service and pods: held until then, it tries again
        # 1, 2, 4, ... s after the first refusal (docs/architecture.md).
        try:
            wait_for(lambda: phase(there, name) == "Running", 180, "resumed: Running on worker-2")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{story(admin, cluster, workers, namespace)}") from None

    admin.delete(resource, name, namespace)  # deleting the manager's job deletes the worker's
    wait_for(lambda: gone(worker, resource, name, namespace), 90, "deleted on worker-2")
    events = admin.request("GET", f"/api/v1/namespaces/{namespace}/events")["items"]
    ours = [e["message"] for e in events if e.get("reportingComponent") == "t9k-operator"]
    assert ours == [], "the manager's operator tells nothing of a job it does not run"


@pytest.mark.timeout(900)  # a worker lost, then reconnected after Kueue's backoff
@pytest.mark.usefixtures("manager_operator")
def test_a_lost_worker_s_job_runs_again_on_the_other_and_is_not_left_running_there(
    queue: str, workers: dict[str, Worker], admin: KubeClient, namespace: str, cluster: Cluster
) -> None:
    """worker-2's API server stopped past MultiKueue's worker-lost timeout (30 s
    on the local clusters): the job is queued again on the manager and, once
    worker-1 has room, runs there; the manager's job tells which worker was lost
    and counts one disruption, and once worker-2 is back its copy is deleted.
    Last of the module: it changes worker-1's quota."""
    kind = "PyTorchTrainingJob"
    name, resource = "lost", kind_resource(kind)
    lost, spare = workers["worker-2"], workers["worker-1"]
    manager = Jobs(admin, namespace, resource)
    on_lost = Jobs(lost.admin, namespace, resource)
    on_spare = Jobs(spare.admin, namespace, resource)
    manager.create(handed_job(kind, name, queue))
    wait_for(lambda: phase(on_lost, name) == "Running", 120, f"{name} Running on worker-2")
    with lost.cluster.apiserver_down():
        # worker-1 gets room only once the manager has queued the job again. In
        # Kueue v0.17.0 a worker that admits the job in the moment between the
        # manager's eviction and its quota given back has its copy deactivated
        # ("Evicted on manager") and never admitted again: the job waits there
        # for good (docs/scheduling.md; Kueue v0.18 no longer dispatches then).
        wait_for(lambda: queued_again(admin, namespace, name), 120, "queued again on the manager")
        # Kueue v0.17.0 may also have copied the Workload to worker-1 during the
        # eviction, before the operator counted the loss on it: that copy would
        # start the job there uncounted. Deleted, as docs/scheduling.md tells
        # users; MultiKueue copies the counted Workload again.
        for copy in spare.admin.list_all(WORKLOADS, namespace)[0]:
            if (copy["metadata"].get("annotations") or {}).get(COUNTED) != "1":
                delete_quietly(spare.admin, WORKLOADS, copy["metadata"]["name"], namespace)
        cq = spare.admin.get(CLUSTER_QUEUES, "cq")
        cq["spec"] = cluster_queue_body("cq", "Never", gpus=24)["spec"]
        spare.admin.replace(CLUSTER_QUEUES, cq)
        try:
            wait_for(lambda: phase(on_spare, name) == "Running", 180, "dispatched to worker-1")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{story(admin, cluster, workers, namespace)}") from None
        (told,) = [e for e in manager.events(name) if e[1] == "WorkerLost"]
        assert told[0] == "Warning" and "Worker cluster worker-2 no longer holds" in told[2]
        wait_for(
            lambda: manager.status(name).get("disruptionCount") == 1,
            60,
            "the loss counted in the status that comes home",
        )
        assert manager.status(name).get("restartCount", 0) == 0, "not against backoffLimit"
        assert on_spare.status(name)["disruptionCount"] == 1
        assert workload_of(admin, namespace, name)["status"].get("clusterName") == "worker-1"

    # worker-2 back: once MultiKueue reconnects (5 s after losing it, then twice
    # as long each time, up to 320 s) it keeps one copy and deletes the other.
    # Kueue v0.17 keeps the first admitted (worker-2's, which ran on through the
    # outage; its Workload on the manager still names worker-1, which Kueue
    # never changes once set): whichever it keeps, one copy runs, and the
    # manager's job shows that one's status.
    def copies() -> list[Worker]:
        return [w for w in (lost, spare) if not gone(w.admin, resource, name, namespace)]

    wait_for(lambda: len(copies()) == 1, 400, "one copy left, on one worker")
    (kept,) = copies()
    on_kept = Jobs(kept.admin, namespace, resource)
    wait_for(
        lambda: manager.status(name).get("tasks") == on_kept.status(name).get("tasks"),
        60,
        f"the manager's job showing the status of {kept.name}'s copy",
    )
    assert phase(on_kept, name) == "Running"
    admin.delete(resource, name, namespace)
    wait_for(lambda: gone(kept.admin, resource, name, namespace), 90, f"deleted on {kept.name}")


def workload_of(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """The manager's Workload of the job ``name``."""
    items, _ = admin.list_all(WORKLOADS, namespace, label_selector=f"t9k.dev/job-name={name}")
    (found,) = items
    return found


def queued_again(admin: KubeClient, namespace: str, name: str) -> bool:
    """Whether the manager's Workload of ``name`` holds quota again after an
    eviction (its Evicted condition back to False)."""
    conditions = workload_of(admin, namespace, name)["status"].get("conditions") or []
    state = {c["type"]: c["status"] for c in conditions}
    return state.get("Evicted") == "False" and state.get("QuotaReserved") == "True"


def story(admin: KubeClient, cluster: Cluster, workers: dict[str, Worker], namespace: str) -> str:
    """Where the namespace's dispatches stand, for a failure's message: the
    MultiKueueClusters' conditions, the manager's Workloads (conditions, checks,
    worker), each reachable worker's, and the manager's Kueue's last log lines
    on the namespace."""
    lines = []
    for mk in admin.list_all(MK_CLUSTERS)[0]:
        lines += [
            f"MultiKueueCluster {mk['metadata']['name']}: {c['type']}={c['status']} since "
            f"{c.get('lastTransitionTime')} {c.get('reason')}: {c.get('message')}"
            for c in (mk.get("status") or {}).get("conditions") or []
        ]
    for where, client in [("manager", admin), *((w.name, w.admin) for w in workers.values())]:
        try:
            items, _ = client.list_all(WORKLOADS, namespace)
        except Exception as exc:  # a lost worker's refusal is told, not raised
            lines.append(f"{where}: {exc}")
            continue
        for wl in items:
            status = wl.get("status") or {}
            lines.append(f"{where}: {wl['metadata']['name']} on {status.get('clusterName')!r}")
            lines += [
                f"  {c['type']}={c['status']} {c.get('reason')}: {c.get('message')}"
                for c in status.get("conditions") or []
            ]
            lines += [
                f"  check {a['name']}={a['state']}: {a.get('message')}"
                for a in status.get("admissionChecks") or []
            ]
    for where, c in [("manager", cluster), *((w.name, w.cluster) for w in workers.values())]:
        log = (c.kubeconfig.parent / "kueue-manager.log").read_text(errors="replace")
        lines.append(f"{where}'s Kueue:")
        lines += [line[:400] for line in log.splitlines() if namespace in line][-25:]
    return "\n".join(lines)
