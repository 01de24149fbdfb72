"""A job that starts to wait is estimated at once, on its events: what it waits
in, the marks and the states seen, and the poller's thread woken by the real
informers' handlers (never started: their caches filled as a watch would),
one round of reads for a burst, none for a job already estimated in the same
state. The expected values are written out by hand."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any, cast

from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.integrations.start_estimate.poller import EstimateStore, Poller
from t9k_operator.integrations.start_estimate.wake import Seen, Wakes, waiting_state
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.serving import Route
from t9k_operator.resources import NODES, PODS, Resource

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
JOBS = Resource("batch.tensorstack.dev", "v1beta1", "genericjobs", "GenericJob")
TURNED_DOWN = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
}
NEVER = {
    "where": "scheduler",
    "lacking": [
        {"resource": GPU, "requested": "16", "pods": 1, "free": "8", "nodes": ["n0", "n1"]}
    ],
    "waitingFor": [],
    "neverFits": True,
    "reason": "never fits: asks 16 nvidia.com/gpu in one pod; the largest node has 8",
    "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
}
"""The estimate of a job of one 16-GPU pod on the two 8-GPU nodes."""


def job(name: str, phase: str = "Pending", **status: Any) -> Obj:
    return {
        "kind": "GenericJob",
        "metadata": {"name": name, "namespace": "t", "uid": f"uid-{name}"},
        "status": {"phase": phase, **status},
    }


def pod(owner: str, node: str = "", *conditions: Obj) -> Obj:
    meta = {
        "name": f"{owner}-worker-0",
        "namespace": "t",
        "labels": {JOB_KIND: "GenericJob", JOB_NAME: owner},
        "ownerReferences": [
            {"kind": "GenericJob", "name": owner, "uid": f"uid-{owner}", "controller": True}
        ],
    }
    return {
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"resources": {"limits": {GPU: "16"}}}]},
        "status": {"phase": "Pending", "conditions": list(conditions)},
    }


def node(name: str) -> Obj:
    return {
        "metadata": {"name": name},
        "status": {"allocatable": {GPU: "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


# -- what a job waits in ------------------------------------------------------------------


def test_what_a_job_waits_in() -> None:
    assert waiting_state(job("a", "Running"), [pod("a", "", TURNED_DOWN)], None) is None
    assert waiting_state(job("a"), [], None) is None  # no pods yet
    assert waiting_state(job("a"), [pod("a")], None) is None  # not looked at yet
    assert waiting_state(job("a"), [pod("a", "n0")], None) is None  # placed
    assert waiting_state(job("a"), [pod("a", "", TURNED_DOWN)], None) == ("scheduler", "")
    group = {"phase": "Inqueue", "message": "1/1 tasks in gang unschedulable"}
    assert waiting_state(job("a", podGroup=group), [pod("a")], None) == ("scheduler", "Inqueue")
    workload: dict[str, Any] = {"metadata": {"name": "a-uid"}, "status": {}}
    assert waiting_state(job("a"), [], workload) == ("Kueue", "")
    workload["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending"}
    ]
    assert waiting_state(job("a"), [], workload) == ("Kueue", "False Pending")
    workload["status"]["admission"] = {"clusterQueue": "cq"}
    assert waiting_state(job("a"), [pod("a", "", TURNED_DOWN)], workload) == ("scheduler", "")


def test_marks_from_many_threads_are_all_taken_at_once() -> None:
    wakes = Wakes()
    assert not wakes.ready.is_set()

    def mark(start: int) -> None:
        for i in range(start, start + 250):
            wakes.mark(("GenericJob", "t", f"j{i}"))

    threads = [threading.Thread(target=mark, args=(n * 250,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wakes.ready.is_set()
    taken = wakes.take()
    assert len(taken) == 1000 and ("GenericJob", "t", "j999") in taken
    assert not wakes.ready.is_set() and wakes.take() == set()
    wakes.mark(("GenericJob", "t", "j0"))  # a mark after a take wakes the thread again
    assert wakes.ready.is_set()


def test_a_state_is_due_once_a_period() -> None:
    clock = [100.0]
    seen = Seen(30.0, lambda: clock[0])
    a = ("GenericJob", "t", "a")
    assert seen.due(a, ("scheduler", ""))
    assert not seen.due(a, ("scheduler", ""))
    assert seen.due(a, ("Kueue", ""))  # another state: due
    clock[0] = 129.0
    assert not seen.due(a, ("scheduler", ""))
    clock[0] = 130.0
    assert seen.due(a, ("scheduler", ""))


# -- the poller, woken -----------------------------------------------------------------------


class Cluster:
    """The API server's answers to a round's two LISTs (two 8-GPU nodes, no
    pod bound), each LIST recorded."""

    def __init__(self) -> None:
        self.lists: list[str] = []

    def list_all(self, resource: Any, namespace: Any = None, **_: Any) -> tuple[list[Obj], str]:
        assert resource == NODES
        self.lists.append("nodes")
        return [node("n0"), node("n1")], "1"

    def list(self, resource: Any, namespace: Any = None, **_: Any) -> Obj:
        assert resource == PODS
        self.lists.append("pods")
        return {"items": []}


class Poll:
    """A poller on informers never started, and what it queued."""

    def __init__(self, jobs: list[Obj], pods: list[Obj], clock: list[float] | None = None):
        self.cluster = Cluster()
        informers = InformerFactory(cast(Any, self.cluster))
        self.jobs, self.pods = informers.informer(JOBS), informers.informer(PODS)
        self.jobs.on_replace(jobs, "1")
        self.pods.on_replace(pods, "1")
        self.queued: list[str] = []
        self.all_queued = threading.Event()
        self.expected = 0
        route = Route(JOBS, self.jobs, self._queue)
        self.store = EstimateStore()
        self.poller = Poller(
            cast(Any, self.cluster),
            {JOBS.plural: route},
            self.pods,
            None,
            self.store,
            30.0,
            lambda: True,
            lambda: NOW,
            (lambda: clock[0]) if clock is not None else time.monotonic,
        )

    def _queue(self, key: str, delay: float) -> None:
        assert delay == 0.0
        self.queued.append(key)
        if len(self.queued) >= self.expected:
            self.all_queued.set()


def test_a_burst_of_waiting_jobs_is_estimated_at_once_in_one_round() -> None:
    names = [f"j{i}" for i in range(1000)]
    poll = Poll([job(n) for n in names], [pod(n, "", TURNED_DOWN) for n in names])
    poll.expected = 1000
    # Its handlers get the jobs and pods already cached as adds: the burst.
    poll.poller.start()
    try:
        # The period is 30 s: queued well within it, they were woken by the events.
        assert poll.all_queued.wait(10), f"{len(poll.queued)} of 1000 queued"
        assert poll.cluster.lists == ["nodes", "pods"]
        assert sorted(poll.queued) == sorted(f"t/{n}" for n in names)
        assert poll.poller.store.get("GenericJob", "t", "j7") == NEVER
        # A job that starts to wait later: its own round, at once.
        poll.all_queued.clear()
        poll.expected = 1001
        poll.jobs.on_add(job("late"))
        poll.pods.on_add(pod("late", "", TURNED_DOWN))
        assert poll.all_queued.wait(10), "the late job not queued"
        assert poll.queued[-1] == "t/late"
        assert poll.cluster.lists == ["nodes", "pods", "nodes", "pods"]
    finally:
        poll.poller.stop()
    assert poll.poller._thread is not None and not poll.poller._thread.is_alive()


def test_a_job_is_estimated_on_its_events_once_per_state_and_period() -> None:
    clock = [1000.0]
    poll = Poll([job("a"), job("b"), job("c", "Running")], [pod("a", "", TURNED_DOWN)], clock=clock)
    a, b, c = ("GenericJob", "t", "a"), ("GenericJob", "t", "b"), ("GenericJob", "t", "c")
    assert poll.poller.estimate_now({a, b, c}) == 1
    assert poll.cluster.lists == ["nodes", "pods"] and poll.queued == ["t/a"]
    # Events again in the same states (its status written, b still without pods): nothing.
    assert poll.poller.estimate_now({a, b, c}) == 0
    assert poll.cluster.lists == ["nodes", "pods"] and poll.queued == ["t/a"]
    # A period later, a is estimated again: the same estimate, not queued.
    clock[0] += 30.0
    assert poll.poller.estimate_now({a}) == 0
    assert poll.cluster.lists == ["nodes", "pods"] * 2 and poll.queued == ["t/a"]
    # Its pod placed: its estimate is dropped (no read needed), and it is queued.
    poll.pods.on_update(pod("a", "n0"))
    assert poll.poller.estimate_now({a}) == 1
    assert poll.store.get(*a) is None and poll.queued == ["t/a", "t/a"]
    assert poll.cluster.lists == ["nodes", "pods"] * 2
    assert poll.poller.estimate_now({a}) == 0 and poll.queued == ["t/a", "t/a"]
