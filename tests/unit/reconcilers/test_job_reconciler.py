"""JobReconciler, the apply path, for every kind: with a fake at the kube/ boundary.

What is checked: status is written before any child is created; the Created
Event (and its counter) comes once, after the first status write succeeded;
children wait for the Service they need; an invalid spec, a name clash and a
refused pod fail the job naming the cause; a refusal that retrying may cure
keeps it Pending; a reconcile that runs ahead of the cache writes nothing.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest
from pytest_mock import MockerFixture

from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.foundation import metrics
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.integrations.checkpoint.integration import Checkpoint
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.integrations.kueue.integration import Kueue
from t9k_operator.integrations.tensorboard.integration import JobTensorBoard
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kube import Conflict, Invalid, NotFound, ServerError
from t9k_operator.reconcilers.pipeline.contract import Integration
from t9k_operator.reconcilers.pipeline.job import CACHE_CATCH_UP, CHILD_WAIT, JobReconciler
from t9k_operator.resources import CONFIGMAPS, NODES, PODS, SECRETS, SERVICES
from t9k_operator.runtime.controller import ControllerContext, Result
from tests.fakes import FakeClock, FakeRecorder
from tests.kinds import kind_table
from tests.unit.reconcilers.fake_kube import FakeKube

NS = "ns"


JOBS: dict[str, tuple[JobKind[Any], dict[str, Any], list[str]]] = kind_table("RECONCILED")
"""kind -> (its hooks, a valid job, the pods a fresh job gets): its ``RECONCILED``
in tests/kinds/<kind>.py."""
KINDS = sorted(JOBS)


class Harness:
    def __init__(
        self,
        kind_name: str,
        job: dict[str, Any] | None = None,
        gang: GangScheduling | None = None,
        kueue: Kueue | None = None,
        integrations: tuple[Integration[Any], ...] | None = None,
        watch_nodes: bool = False,
        sources: dict[str, object] | None = None,
        clock: FakeClock | None = None,
    ) -> None:
        self.kind, base, self.pods = JOBS[kind_name]
        self.fake = FakeKube()
        self.recorder = FakeRecorder()
        self.informers = InformerFactory(self.fake)  # type: ignore[arg-type]
        ctx = ControllerContext(
            client=self.fake,  # type: ignore[arg-type]
            informers=self.informers,
            recorder=self.recorder,  # type: ignore[arg-type]
            workers=1,
            **({"clock": clock} if clock is not None else {}),
        )
        # As the registry orders them: Kueue (when on), gang scheduling, the
        # TensorBoard, checkpoint before a stop.
        on: list[Integration[Any]] = [] if kueue is None else [kueue]
        on += [gang or GangScheduling(), JobTensorBoard(), Checkpoint()]
        if integrations is not None:
            on = list(integrations)
        self.reconciler = JobReconciler(
            self.kind, ctx, tuple(on), watch_nodes=watch_nodes, sources=sources
        )
        self.children = [PODS, SERVICES, CONFIGMAPS, SECRETS]
        self.watched = [
            (w.resource, CHILD_SELECTOR if w.owned else None) for i in on for w in i.watches()
        ]
        obj = copy.deepcopy(job if job is not None else base)
        labels = (obj.get("metadata") or {}).get("labels")
        obj["metadata"] = {"name": "j", "namespace": NS, "generation": 1}
        if labels:
            obj["metadata"]["labels"] = labels
        self.fake.put(self.reconciler.resource, obj)
        self.sync()

    def sync(self) -> None:
        """The watch catches up: every cache holds what the fake holds."""
        self.fake.sync(
            self.informers,
            (self.reconciler.resource, None),
            *((r, CHILD_SELECTOR) for r in self.children),
            *self.watched,
            *([(NODES, None)] if self.reconciler.nodes is not None else []),
        )

    def reconcile(self) -> Result:
        return self.reconciler.reconcile(f"{NS}/j")

    def run(self, passes: int = 4) -> None:
        """Reconcile and let the caches catch up, ``passes`` times."""
        for _ in range(passes):
            self.reconcile()
            self.sync()

    def job(self) -> dict[str, Any]:
        return self.fake.get(self.reconciler.resource, "j", NS)

    def pod_names(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.fake.of_kind("Pod"))


def created_count(kind: str) -> float:
    return metrics.JOBS_CREATED.labels(kind, NS)._value.get()  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", KINDS)
def test_status_comes_first_then_the_children(kind: str) -> None:
    h = Harness(kind)
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    first = h.fake.writes[0]
    assert first == ("replace_status", h.kind.crd.kind, "j"), h.fake.writes
    assert h.job()["status"]
    if h.kind.uses_ssh:
        assert [s["metadata"]["name"] for s in h.fake.of_kind("Secret")] == ["j-ssh"]
    assert h.recorder.reasons().count("Created") == 1


def test_a_job_deleted_since_the_cache_saw_it_ends_the_reconcile_quietly() -> None:
    # A namespace being torn down deletes the job while its key waits in the
    # queue: the status write meets NotFound. That is no error to retry.
    h = Harness("PyTorchTrainingJob")
    h.fake.fail_next("replace_status", h.kind.crd.kind, NotFound("gone"))
    assert h.reconcile() == Result()
    assert h.fake.writes == [], "nothing is created for a job that is gone"


@pytest.mark.parametrize("kind", KINDS)
def test_created_is_told_once_when_the_first_status_write_conflicts(kind: str) -> None:
    h = Harness(kind)
    before = created_count(kind)
    h.fake.fail_next("replace_status", h.kind.crd.kind, Conflict("modified"))
    with pytest.raises(Conflict):
        h.reconcile()
    assert h.fake.writes == [], "nothing is created before the status is written"
    assert "Created" not in h.recorder.reasons()
    h.run()
    assert h.recorder.reasons().count("Created") == 1
    assert created_count(kind) == before + 1
    assert h.pod_names() == JOBS[kind][2]


def test_msjob_workers_wait_for_the_scheduler_service() -> None:
    h = Harness("MSJob")
    h.reconcile()  # status, the Services, the scheduler's pod
    assert h.pod_names() == ["j-scheduler-0"]
    # The job and pod caches catch up; the Service cache lags: its ClusterIP is
    # unknown, so the workers (whose MS_SCHED_HOST it is) wait.
    h.fake.sync(h.informers, (h.reconciler.resource, None), (PODS, CHILD_SELECTOR))
    assert h.reconcile() == Result(requeue_after=CHILD_WAIT)
    assert h.pod_names() == ["j-scheduler-0"]
    h.sync()
    h.reconcile()
    assert h.pod_names() == JOBS["MSJob"][2]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reconcile_ahead_of_the_cache_writes_nothing(kind: str) -> None:
    h = Harness(kind)
    h.reconcile()  # writes status; the cache still holds the job without it
    writes = list(h.fake.writes)
    assert h.reconcile() == Result(requeue_after=CACHE_CATCH_UP)
    assert h.fake.writes == writes


def test_an_invalid_spec_fails_the_job_naming_the_field() -> None:
    bad = copy.deepcopy(JOBS["PyTorchTrainingJob"][1])
    bad["spec"]["replicaSpecs"][0]["restartPolicy"] = "Sometimes"
    h = Harness("PyTorchTrainingJob", bad)
    h.run()
    status = h.job()["status"]
    assert status["phase"] == "Failed"
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.replicaSpecs[0].restartPolicy" in failed["message"]
    assert h.pod_names() == []


def held_pod(name: str, kind: str, owner: str, uid: str, api_version: str = "v1") -> dict[str, Any]:
    """A pod of the operator's named ``name``, whose controller is ``kind`` ``owner`` (``uid``)."""
    ref = {"apiVersion": api_version, "kind": kind, "name": owner, "uid": uid, "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"app.kubernetes.io/managed-by": "t9k-operator"},
            "ownerReferences": [ref],
        },
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_pod_name_held_by_another_job_fails_with_name_conflict(kind: str) -> None:
    h = Harness(kind)
    h.fake.put(PODS, held_pod(JOBS[kind][2][-1], "OtherJob", "x", "other"))
    h.run()
    conditions = {c["type"]: c for c in h.job()["status"].get("conditions") or []}
    reason = conditions.get("Failed", {}).get("reason")
    if kind == "MSJob":  # Kubeflow-style status
        assert any(c.get("reason") == "NameConflict" for c in h.job()["status"]["conditions"])
    else:
        assert reason == "NameConflict", conditions
    assert "NameConflict" in h.recorder.reasons()


@pytest.mark.parametrize("kind", KINDS)
def test_a_pod_of_a_deleted_job_of_the_same_name_holds_the_new_job_until_it_goes(
    kind: str,
) -> None:
    """A job recreated under its name (MultiKueue dispatching it again) meets the
    previous one's pods until the garbage collector takes them: it waits."""
    clock = FakeClock()
    h = Harness(kind, clock=clock)
    name = JOBS[kind][2][-1]
    previous = held_pod(name, kind, "j", "the-previous-j", h.kind.crd.api_version)
    h.fake.put(PODS, previous)
    h.run()
    status = h.job()["status"]
    assert status["phase"] not in ("Failed", "Succeeded"), status
    assert "NameConflict" not in h.recorder.reasons()
    told = [e.message for e in h.recorder.events if e.reason == "FailedCreate"]
    assert any("the previous" in m and "the-previous-j" in m for m in told), told
    del h.fake.objects[("Pod", NS, name)]  # collected
    h.sync()
    clock.step(60)  # the hold's retry is due
    h.run()
    assert h.pod_names() == JOBS[kind][2]


@pytest.mark.parametrize("kind", KINDS)
def test_a_pod_the_api_server_refuses_as_invalid_fails_the_job(kind: str) -> None:
    h = Harness(kind)
    h.fake.fail_next("create", "Pod", Invalid('Pod "j-worker-0" is invalid: spec.x: bad'))
    h.run()
    assert "InvalidSpec" in h.recorder.reasons()
    messages = [e.message for e in h.recorder.events if e.reason == "InvalidSpec"]
    assert any("spec.x: bad" in m and "retrying cannot help" in m for m in messages)


def test_a_refusal_retrying_may_cure_keeps_the_job_pending() -> None:
    clock = FakeClock()
    h = Harness("PyTorchTrainingJob", clock=clock)
    h.fake.fail_next("create", "Pod", ServerError("etcdserver: request timed out"))
    assert h.reconcile() == Result(requeue=True)
    h.sync()
    # The next pass plans from the refusal, and waits for its backoff.
    assert h.reconcile() == Result(requeue_after=1.0)
    status = h.job()["status"]
    assert status["phase"] == "Pending"
    init = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert init["reason"] == "FailedCreate" and "request timed out" in init["message"]
    assert "FailedCreate" in h.recorder.reasons()
    h.sync()
    clock.step(1.0)  # the backoff is due: the next pass tries again
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]


def _wide_job(replicas: int) -> dict[str, Any]:
    job = copy.deepcopy(JOBS["PyTorchTrainingJob"][1])
    job["spec"]["replicaSpecs"][0]["replicas"] = replicas
    return job


def test_a_wide_job_creates_its_pods_in_parallel_slow_start_batches(mocker: MockerFixture) -> None:
    from t9k_operator.reconcilers.pipeline.job import CREATE_PARALLEL

    h = Harness("PyTorchTrainingJob", _wide_job(40))
    lock = threading.Lock()
    active = peak = 0
    real_create = h.fake.create

    def create(*args: Any, **kwargs: Any) -> Any:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.005)
        try:
            with lock:  # the fake's store is not thread-safe; the sleep above overlaps
                return real_create(*args, **kwargs)
        finally:
            with lock:
                active -= 1

    mocker.patch.object(h.fake, "create", side_effect=create)
    h.reconcile()
    names = h.pod_names()
    assert names == sorted(f"j-worker-{i}" for i in range(40))  # every one, once
    assert len([w for w in h.fake.writes if w[0] == "create" and w[1] == "Pod"]) == 40
    assert 1 < peak <= CREATE_PARALLEL


def test_a_refused_pod_stops_the_batches_early(mocker: MockerFixture) -> None:
    h = Harness("PyTorchTrainingJob", _wide_job(64))
    # Batches of 1 (worker-0), then 2 (worker-1, worker-2): worker-2 is refused,
    # and no third batch starts.
    real_create = h.fake.create
    calls = 0
    lock = threading.Lock()

    def create(resource: Any, body: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        with lock:
            calls += 1
            if body["kind"] == "Pod" and body["metadata"]["name"] == "j-worker-2":
                raise ServerError("exceeded quota")
            return real_create(resource, body, *args, **kwargs)

    mocker.patch.object(h.fake, "create", side_effect=create)
    assert h.reconcile() == Result(requeue=True)
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    assert calls == 1 + 1 + 2  # the Service, then three pods
    h.sync()
    assert h.reconcile().requeue_after == pytest.approx(1.0, abs=0.5)  # held: its backoff
    assert calls == 1 + 1 + 2, "held: no pod is created while the refusal is told"
    assert "FailedCreate" in h.recorder.reasons()
    assert h.job()["status"]["phase"] == "Pending"


def test_a_reconcile_before_the_cache_shows_the_pods_created_waits() -> None:
    """Without the wait, the plan would list the pods again (each create meeting
    AlreadyExists) and write a status that calls them Creating."""
    h = Harness("PyTorchTrainingJob")
    h.reconcile()  # status, Service, both pods
    # The job's cache catches up (our status write shows), the pods' does not.
    h.fake.sync(h.informers, (h.reconciler.resource, None), (SERVICES, CHILD_SELECTOR))
    writes = list(h.fake.writes)
    assert h.reconcile() == Result(requeue_after=CACHE_CATCH_UP)
    assert h.fake.writes == writes
    h.sync()
    h.reconcile()  # the pods show: planning resumes
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]
    assert len([w for w in h.fake.writes if w[:2] == ("create", "Pod")]) == 2


def test_a_created_pod_deleted_before_the_cache_saw_it_ends_the_wait() -> None:
    h = Harness("PyTorchTrainingJob")
    h.reconcile()
    h.fake.sync(h.informers, (h.reconciler.resource, None), (SERVICES, CHILD_SELECTOR))
    # One pod shows; the other was deleted before its creation was seen.
    pods = h.fake.of_kind("Pod")
    h.reconciler._pod_gone(pods[1])
    h.informers.informer(PODS, CHILD_SELECTOR).store.replace([pods[0]], "999")
    assert h.reconcile() != Result(requeue_after=CACHE_CATCH_UP)


def test_pod_events_reach_the_job_after_a_batch_period_job_events_at_once() -> None:
    """A job's pods change together: one reconcile (and one status write) for
    the batch, as the Kubernetes Job controller's sync batch period gives."""
    from t9k_operator.reconcilers.pipeline.job import POD_BATCH_PERIOD

    h = Harness("PyTorchTrainingJob")
    h.reconcile()
    queue = h.reconciler.controller.queue
    pods = h.fake.of_kind("Pod")
    informer = h.informers.informer(PODS, CHILD_SELECTOR)
    started = time.monotonic()
    for pod in pods:
        informer.on_add(pod)
    assert queue.len() == 0, "a pod's event does not reach the job at once"
    while queue.len() == 0 and time.monotonic() - started < 5:
        queue.move_ready_items()
        time.sleep(0.01)
    assert time.monotonic() - started >= POD_BATCH_PERIOD
    assert queue.len() == 1, "the pods' events make one reconcile"
    key, _ = queue.get()
    queue.done(key)
    h.informers.informer(h.reconciler.resource, None).on_update(h.job())
    assert queue.len() == 1, "a job's own event is handled at once"


def _node(name: str, ready: str, reason: str = "KubeletReady") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": reason}]},
    }


def _run_pods_on(h: Harness, node: str) -> None:
    for pod in h.fake.of_kind("Pod"):
        pod["spec"]["nodeName"] = node
        pod["status"] = {
            "phase": "Running",
            "containerStatuses": [
                {"name": c["name"], "state": {"running": {}}} for c in pod["spec"]["containers"]
            ],
        }
        h.fake.put(PODS, pod)
    h.sync()


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_whose_pods_node_is_not_ready_is_unknown_until_it_is_back(kind: str) -> None:
    h = Harness(kind, watch_nodes=True)
    h.fake.put(NODES, _node("n1", "True"))
    h.run()
    _run_pods_on(h, "n1")
    h.run()
    assert h.job()["status"]["phase"] == "Running"
    h.fake.put(NODES, _node("n1", "Unknown", "NodeStatusUnknown"))
    h.sync()
    h.run()
    status = h.job()["status"]
    assert status["phase"] == "Unknown"
    conditions = status["t9kConditions" if kind == "MSJob" else "conditions"]
    failure = next(c for c in conditions if c["type"] == "ReplicaFailure")
    if kind == "MSJob":  # Kubeflow's conditions: Running, Unknown
        running = next(c for c in status["conditions"] if c["type"] == "Running")
        assert (running["status"], running["reason"]) == ("Unknown", "MSJobNodeNotReady")
        assert running["message"] == failure["message"]
    assert failure["reason"] == "NodeNotReady"
    assert failure["message"].startswith("Node n1 is not ready (NodeStatusUnknown): pods ")
    assert all(name in failure["message"] for name in h.pods)
    h.fake.put(NODES, _node("n1", "True"))
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Running"


def test_without_nodes_watched_a_lost_node_goes_unseen() -> None:
    h = Harness("PyTorchTrainingJob")
    h.fake.put(NODES, _node("n1", "Unknown", "NodeStatusUnknown"))
    h.run()
    _run_pods_on(h, "n1")
    h.run()
    assert h.reconciler.nodes is None and h.job()["status"]["phase"] == "Running"


def test_a_node_whose_readiness_changes_reconciles_the_jobs_on_it() -> None:
    h = Harness("PyTorchTrainingJob", watch_nodes=True)
    h.fake.put(NODES, _node("n1", "True"))
    h.run()
    _run_pods_on(h, "n1")
    h.run()
    queue = h.reconciler.controller.queue
    while queue.len():
        key, _ = queue.get()
        queue.done(key)
    nodes = h.informers.informer(NODES)
    ready, lost = _node("n1", "True"), _node("n1", "Unknown", "NodeStatusUnknown")
    nodes.on_update(ready)  # a heartbeat: no change of readiness
    nodes.on_update(copy.deepcopy(ready))
    assert queue.len() == 0
    nodes.on_update(lost)
    assert queue.len() == 1
    key, _ = queue.get()
    assert key == f"{NS}/j"
    queue.done(key)
    nodes.on_update(_node("n2", "Unknown"))  # no pod of the job there
    assert queue.len() == 0


def test_a_cordoned_node_reconciles_the_jobs_on_it_and_asks_for_their_checkpoints() -> None:
    base = copy.deepcopy(JOBS["PyTorchTrainingJob"][1])
    base["spec"]["runPolicy"] = {"checkpoint": {"graceSeconds": 60}}
    h = Harness("PyTorchTrainingJob", job=base, watch_nodes=True)
    h.fake.put(NODES, _node("n1", "True"))
    h.run()
    _run_pods_on(h, "n1")
    h.run()
    assert "requestedAt" not in (h.job()["status"].get("checkpoint") or {})
    queue = h.reconciler.controller.queue
    while queue.len():
        key, _ = queue.get()
        queue.done(key)
    cordoned = _node("n1", "True")
    cordoned["spec"] = {"unschedulable": True}
    h.informers.informer(NODES).on_update(cordoned)  # as ready as before
    assert queue.len() == 1
    h.fake.put(NODES, cordoned)
    h.sync()
    h.run()
    saved = h.job()["status"]["checkpoint"]
    assert saved["reason"] == "NodeCordoned" and saved["requestedAt"]
    assert not [p for p in h.fake.writes if p[0] == "delete"]
    h.fake.put(NODES, _node("n1", "True"))  # uncordoned
    h.sync()
    h.run()
    assert "requestedAt" not in (h.job()["status"].get("checkpoint") or {})


def test_an_msjob_is_deleted_its_ttl_after_it_finished() -> None:
    base = copy.deepcopy(JOBS["MSJob"][1])
    base["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 0}
    h = Harness("MSJob", job=base)
    h.run()
    for pod in h.fake.of_kind("Pod"):
        if pod["metadata"]["name"] == "j-worker-0":
            pod["status"] = {
                "phase": "Succeeded",
                "containerStatuses": [
                    {"name": "mindspore", "state": {"terminated": {"exitCode": 0}}}
                ],
            }
            h.fake.put(PODS, pod)
    h.sync()
    h.run(2)
    assert ("MSJob", NS, "j") not in h.fake.objects
    assert ("delete", "MSJob", "j") in h.fake.writes
