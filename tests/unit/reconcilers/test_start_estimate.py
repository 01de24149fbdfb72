"""The start estimate's arithmetic, on hand-written cases: quota freed in the
order the holders end, room on nodes, what is lacking, and the status it
renders (expected values written out by hand, never computed by the code)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from t9k_operator.integrations.start_estimate.arithmetic import (
    Holder,
    Lack,
    bucket,
    fits,
    lacking,
    quantity,
    quota_estimate,
    room_estimate,
)
from t9k_operator.integrations.start_estimate.inputs import job_end, node_room, pod_requests
from t9k_operator.integrations.start_estimate.integration import (
    QueuePlace,
    StartEstimate,
    Waiting,
    kueue_estimate,
    room_part,
)
from t9k_operator.integrations.start_estimate.poller import EstimateStore

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


# -- quantities ---------------------------------------------------------------------------


def test_quantities() -> None:
    assert quantity("500m") == 0.5
    assert quantity("2Gi") == 2 * 1024**3
    assert quantity("1e3") == 1000.0
    assert quantity("8") == 8.0
    assert quantity(4) == 4.0
    assert quantity("3k") == 3000.0
    assert quantity("bogus") == 0.0
    assert quantity(True) == 0.0


def test_pod_requests_count_limits_alone_and_the_largest_init_container() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1"}, "limits": {GPU: "4"}}},
                {"resources": {"requests": {"cpu": "500m", GPU: "2"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
        }
    }
    assert pod_requests(pod) == {"cpu": 3.0, GPU: 6.0}


# -- quota (Kueue) -----------------------------------------------------------------------


def test_quota_frees_when_the_one_holder_ends() -> None:
    # 24 GPUs, all held by a job ending in 25 minutes; the waiting job needs 8.
    holders = [Holder("t/a", {GPU: 24}, at(25))]
    e = quota_estimate({GPU: 8}, {GPU: 0}, holders, NOW)
    assert e.at == at(25)
    assert e.waiting_for == ("t/a",)


def test_quota_frees_in_the_order_holders_end_until_enough() -> None:
    # Free 0; b (8 GPUs) ends first at +5, a (16) at +10, c (8) at +3 but holds cpu only.
    holders = [
        Holder("t/a", {GPU: 16}, at(10)),
        Holder("t/b", {GPU: 8}, at(5)),
        Holder("t/c", {"cpu": 8}, at(3)),
    ]
    e = quota_estimate({GPU: 16, "cpu": 1}, {GPU: 0, "cpu": 100}, holders, NOW)
    assert e.at == at(10)
    assert e.waiting_for == ("t/b", "t/a")


def test_quota_enough_after_the_first_holder() -> None:
    holders = [Holder("t/a", {GPU: 16}, at(10)), Holder("t/b", {GPU: 8}, at(5))]
    e = quota_estimate({GPU: 8}, {GPU: 0}, holders, NOW)
    assert e.at == at(5)
    assert e.waiting_for == ("t/b",)


def test_quota_free_now() -> None:
    e = quota_estimate({GPU: 8}, {GPU: 8}, [], NOW)
    assert e.at == NOW
    assert "free" in e.reason


def test_quota_holder_past_its_eta_frees_it_now_not_in_the_past() -> None:
    e = quota_estimate({GPU: 8}, {GPU: 0}, [Holder("t/a", {GPU: 8}, at(-3))], NOW)
    assert e.at == NOW


def test_quota_unknown_past_a_holder_without_eta() -> None:
    holders = [Holder("t/a", {GPU: 8}, at(5)), Holder("t/b", {GPU: 16}, None)]
    e = quota_estimate({GPU: 16}, {GPU: 0}, holders, NOW)
    assert e.at is None
    assert e.waiting_for == ("t/a", "t/b")
    assert "t/b" in e.reason and "unknown" in e.reason


def test_quota_too_small_for_the_job_and_those_ahead() -> None:
    e = quota_estimate({GPU: 32}, {GPU: 0}, [Holder("t/a", {GPU: 24}, at(5))], NOW)
    assert e.at is None
    assert "lacks 8 nvidia.com/gpu" in e.reason


# -- room on nodes -----------------------------------------------------------------------


def test_lacking_names_the_resource_and_the_nodes_with_the_most_free() -> None:
    free = {"n0": {GPU: 0, "cpu": 30}, "n1": {GPU: 4, "cpu": 30}, "n2": {GPU: 4, "cpu": 30}}
    pods = [{GPU: 8, "cpu": 1}] * 2
    assert lacking(pods, free) == [Lack(GPU, 8.0, 2, 4.0, ("n1", "n2"))]


def test_nothing_lacking_when_each_resource_has_room_for_every_pod() -> None:
    free = {"n0": {GPU: 8}, "n1": {GPU: 8}}
    assert lacking([{GPU: 8}, {GPU: 8}], free) == []
    assert fits([{GPU: 8}, {GPU: 8}], free)
    assert not fits([{GPU: 8}, {GPU: 8}, {GPU: 1}], free)


def test_first_fit_places_the_largest_first() -> None:
    # 6 then 2 on an 8-GPU node and a 2-GPU node fits; 2 first on the 8 would not.
    assert fits([{GPU: 2}, {GPU: 6}, {GPU: 2}], {"a": {GPU: 8}, "b": {GPU: 2}})


def test_room_frees_as_the_pods_on_nodes_end() -> None:
    free = {"n0": {GPU: 0}, "n1": {GPU: 0}}
    holders = [
        Holder("t/a", {GPU: 8}, at(30), "n0"),
        Holder("t/b", {GPU: 4}, at(10), "n1"),
        Holder("t/b", {GPU: 4}, at(10), "n1"),
    ]
    e = room_estimate([{GPU: 8}], free, holders, NOW)
    assert e.at == at(10)
    assert e.waiting_for == ("t/b",)
    e = room_estimate([{GPU: 8}, {GPU: 8}], free, holders, NOW)
    assert e.at == at(30)
    assert e.waiting_for == ("t/b", "t/a")


def test_room_never_enough_on_small_nodes() -> None:
    e = room_estimate([{GPU: 16}], {"n0": {GPU: 8}}, [], NOW)
    assert e.at is None
    assert e.reason == "its pods do not fit on the nodes even with every running pod ended"


def test_node_room_subtracts_bound_pods_and_skips_unready_or_cordoned_nodes() -> None:
    def node(name: str, ready: str = "True", cordoned: bool = False) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"unschedulable": cordoned},
            "status": {
                "allocatable": {GPU: "8", "cpu": "32"},
                "conditions": [{"type": "Ready", "status": ready}],
            },
        }

    def pod(node: str, gpus: str, phase: str = "Running") -> dict[str, Any]:
        return {
            "metadata": {"name": "p", "namespace": "t"},
            "spec": {"nodeName": node, "containers": [{"resources": {"requests": {GPU: gpus}}}]},
            "status": {"phase": phase},
        }

    nodes = [node("a"), node("b", ready="False"), node("c", cordoned=True)]
    pods = [pod("a", "3"), pod("a", "4", phase="Succeeded")]
    assert node_room(nodes, pods) == {"a": {GPU: 5.0, "cpu": 32.0}}


# -- a job's end, and the buckets ----------------------------------------------------------


def test_job_end_from_progress() -> None:
    job = {
        "status": {
            "progress": {
                "step": 100,
                "totalSteps": 1000,
                "stepsPerSecond": 2.0,
                "lastReportTime": "2026-01-01T12:00:00Z",
            }
        }
    }
    assert job_end(job) == at(7.5)  # 900 steps at 2 a second
    assert job_end({"status": {"progress": {"step": 1}}}) is None
    assert job_end({}) is None


def test_bucket_to_the_minute_and_beyond_an_hour_to_five() -> None:
    assert bucket(NOW + timedelta(seconds=29), NOW) == NOW
    assert bucket(NOW + timedelta(seconds=31), NOW) == at(1)
    assert bucket(at(122), NOW) == at(120)
    assert bucket(at(123), NOW) == at(125)
    assert bucket(None, NOW) is None


# -- the status --------------------------------------------------------------------------


def _workload(name: str, gpus: int, count: int = 1, admitted_in: str = "") -> dict[str, Any]:
    template = {"spec": {"containers": [{"resources": {"requests": {GPU: str(gpus)}}}]}}
    w: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "t",
            "ownerReferences": [
                {"kind": "GenericJob", "name": name.split("-")[0], "controller": True}
            ],
        },
        "spec": {"queueName": "team", "podSets": [{"count": count, "template": template}]},
    }
    if admitted_in:
        usage = {GPU: str(gpus * count)}
        w["status"] = {
            "admission": {
                "clusterQueue": admitted_in,
                "podSetAssignments": [{"resourceUsage": usage}],
            }
        }
    return w


def test_kueue_estimate_renders_positions_holders_and_the_time() -> None:
    cq = {
        "spec": {
            "resourceGroups": [{"flavors": [{"resources": [{"name": GPU, "nominalQuota": "24"}]}]}]
        },
        "status": {"flavorsReservation": [{"resources": [{"name": GPU, "total": "24"}]}]},
    }
    running = _workload("big-1234abcd", 8, count=3, admitted_in="cq")
    waiting = _workload("next-5678abcd", 8)
    jobs = {
        ("GenericJob", "t", "big"): {
            "status": {
                "progress": {
                    "step": 0,
                    "totalSteps": 600,
                    "stepsPerSecond": 1.0,
                    "lastReportTime": "2026-01-01T11:59:50Z",
                }
            }
        }
    }
    place = QueuePlace("team", "cq", 1, 1)
    got = kueue_estimate(waiting, place, cq, [running, waiting], jobs, NOW)
    assert got == {
        "where": "Kueue",
        "localQueue": "team",
        "localQueuePosition": 1,
        "clusterQueue": "cq",
        "clusterQueuePosition": 1,
        "waitingFor": [{"name": "t/big", "endTime": "2026-01-01T12:10:00Z"}],
        "estimatedStartTime": "2026-01-01T12:10:00Z",  # 11:59:50 + 600 s, to the minute
        "reason": "the quota it needs is free once t/big ends",
    }


def test_kueue_estimate_counts_the_workloads_ahead() -> None:
    cq = {
        "spec": {
            "resourceGroups": [{"flavors": [{"resources": [{"name": GPU, "nominalQuota": "16"}]}]}]
        },
        "status": {"flavorsReservation": [{"resources": [{"name": GPU, "total": "16"}]}]},
    }
    a = _workload("a-00000000", 8, admitted_in="cq")
    b = _workload("b-00000000", 8, admitted_in="cq")

    def job(minutes: int) -> dict[str, Any]:
        report = "2026-01-01T12:00:00Z"
        return {
            "status": {
                "progress": {
                    "step": 0,
                    "totalSteps": minutes * 60,
                    "stepsPerSecond": 1.0,
                    "lastReportTime": report,
                }
            }
        }

    jobs = {("GenericJob", "t", "a"): job(5), ("GenericJob", "t", "b"): job(20)}
    ahead = _workload("c-00000000", 8)
    mine = _workload("d-00000000", 8)
    place = QueuePlace("team", "cq", 2, 2, (ahead,))
    got = kueue_estimate(mine, place, cq, [a, b, ahead, mine], jobs, NOW)
    # The one ahead takes a's 8 GPUs at +5; this one waits for b's at +20.
    assert got["estimatedStartTime"] == "2026-01-01T12:20:00Z"
    assert [h["name"] for h in got["waitingFor"]] == ["t/a", "t/b"]
    # Ahead of it two, of which none could be read: unknown, and said.
    place = QueuePlace("team", "cq", 3, 3, ())
    got = kueue_estimate(mine, place, cq, [a, b, mine], jobs, NOW)
    assert "estimatedStartTime" not in got
    assert got["reason"] == "of the 2 workloads ahead of it, 0 could be read"


def test_room_part_names_the_lacking_resource_and_nodes() -> None:
    room = {"n0": {GPU: 8.0}, "n1": {GPU: 8.0}}
    got = room_part("scheduler", [{GPU: 16.0}], room, [], NOW)
    assert got == {
        "where": "scheduler",
        "lacking": [
            {"resource": GPU, "requested": "16", "pods": 1, "free": "8", "nodes": ["n0", "n1"]}
        ],
        "waitingFor": [],
        "reason": "its pods do not fit on the nodes even with every running pod ended",
    }


def test_the_status_has_the_estimate_only_while_pending() -> None:
    integration = StartEstimate(30, kueue=False)
    estimate = {"where": "scheduler", "reason": "r"}

    class View:
        paused = False

    for phase, expected in (("Pending", estimate), ("Running", None), ("Failed", None)):
        status: dict[str, Any] = {"phase": phase}
        integration.status(Waiting(estimate), View(), status)  # type: ignore[arg-type]
        assert status.get("startEstimate") == expected


def test_the_store_says_which_jobs_changed_gone_ones_too() -> None:
    store = EstimateStore()
    a, b = ("GenericJob", "t", "a"), ("GenericJob", "t", "b")
    assert store.replace({a: {"reason": "x"}, b: {"reason": "y"}}) == {a, b}
    assert store.replace({a: {"reason": "x"}, b: {"reason": "y"}}) == set()
    assert store.replace({a: {"reason": "z"}}) == {a, b}  # b no longer waits
    assert store.get(*a) == {"reason": "z"} and store.get(*b) is None


def test_kueue_estimate_carries_kueues_words_and_free_quota_kueue_refuses_is_no_start_now() -> None:
    cq = {
        "spec": {
            "resourceGroups": [{"flavors": [{"resources": [{"name": GPU, "nominalQuota": "64"}]}]}]
        },
        "status": {"flavorsReservation": [{"resources": [{"name": GPU, "total": "16"}]}]},
    }
    mine = _workload("wide-00000000", 8, count=4)
    place = QueuePlace("team", "cq", 1, 1)
    # Kueue has said nothing yet: the quota is free, so it starts at Kueue's next pass.
    got = kueue_estimate(mine, place, cq, [mine], {}, NOW)
    assert got["estimatedStartTime"] == "2026-01-01T12:00:00Z" and "message" not in got
    # Kueue tried and could not place it (no rack holds it): its words, and no time.
    said = "couldn't assign flavors to pod set worker: topology \"racks\" doesn't allow to fit"
    mine["status"] = {
        "conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": said}
        ]
    }
    got = kueue_estimate(mine, place, cq, [mine], {}, NOW)
    assert "estimatedStartTime" not in got
    assert got["message"] == said
    assert got["reason"] == "the quota it needs is free, yet Kueue does not admit it"
    # Kueue's words on quota may be older than the quota freed since: the time stands.
    mine["status"]["conditions"][0]["message"] = "insufficient unused quota for nvidia.com/gpu"
    got = kueue_estimate(mine, place, cq, [mine], {}, NOW)
    assert got["estimatedStartTime"] == "2026-01-01T12:00:00Z"
    assert got["message"] == "insufficient unused quota for nvidia.com/gpu"
