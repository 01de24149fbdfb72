"""The endpoint's pace (integrations/progress/pacing.py) as the endpoint tells
it: ``next`` in every answer, from the job's ranks and the endpoint's load; the
liveness reports of the ranks that do not report progress; each job's share."""

from __future__ import annotations

import heapq
import json
from typing import Any

from t9k_operator.integrations.progress.pacing import Pacer
from t9k_operator.integrations.progress.pods import job_path
from tests.unit.reconcilers.test_endpoint import PTJ, World


def post(w: World, job: str = "a", token: str = "ta", rank: int = 0, body: Any = None) -> Any:
    data = json.dumps({"step": 3} if body is None else body).encode()
    headers = {"Authorization": f"Bearer {token}", "X-T9k-Rank": str(rank)}
    return w.endpoint.handle("POST", job_path("ns", PTJ.plural, job), headers, data)


def test_every_answer_tells_the_pace_and_it_grows_with_the_ranks() -> None:
    w = World(pacer=Pacer(capacity=10.0, seed=1))
    first = post(w)
    assert first.status == 202 and first.next is not None and 0.8 <= first.next <= 1.0
    assert json.loads(first.body())["next"] == round(first.next, 2)
    for rank in range(40):  # 40 processes now report: 4 a second each reaches 10
        post(w, rank=rank)
    told = post(w, rank=39).next
    assert told is not None and 3.2 <= told <= 4.0
    assert w.endpoint.pacer.ranks == 40


def test_a_job_judged_for_hangs_is_paced_within_its_timeout() -> None:
    w = World(pacer=Pacer(capacity=1.0, seed=1))
    w.jobs.objs[("ns", "a")]["spec"] = {"runPolicy": {"progress": {"hangTimeoutSeconds": 60}}}
    for rank in range(100):  # 100 s a rank at this capacity, but the timeout is 60 s
        told = post(w, rank=rank).next
    assert told is not None and told <= 30.0  # many ranks in the pod: any keeps it heard
    assert (post(w, "b", "tb").next or 0) > 30.0  # a job not judged: the capacity's pace


def test_a_pod_with_one_reporting_rank_is_told_a_quarter_of_its_timeout() -> None:
    pacer = Pacer(capacity=1.0, seed=1)
    for pod in range(100):
        pace = pacer.heard("ns/a", f"pod-{pod}/0", 0.0, 60.0)
    assert pace <= 15.0
    assert pacer.pace() == 60.0  # the ceiling: 100 s at this capacity


def test_the_pace_stretches_when_more_arrives_than_the_capacity() -> None:
    pacer = Pacer(capacity=10.0, seed=1)
    clock = 0.0
    for _ in range(21):
        for _ in range(40):  # 40 a second, from reporters that do not obey
            pacer.arrived(clock)
        clock += 1.0
    assert pacer.load >= 30.0
    assert pacer.pace() >= 3.0


def test_a_liveness_report_keeps_the_pod_heard_and_leaves_its_progress() -> None:
    w = World()
    assert post(w, body={}).message == "alive"  # nothing kept yet: not judged
    assert w.store.latest("ja") == []
    assert post(w, body={"step": 5, "totalSteps": 10}).status == 202
    (before,) = w.store.latest("ja")
    w.clock.step(30)
    answer = post(w, rank=3, body={})
    assert (answer.status, answer.result) == (202, "accepted")
    (after,) = w.store.latest("ja")
    assert after.report == before.report and after.at == before.at  # progress as it was
    assert after.last_heard == w.clock.now() > before.last_heard
    assert len(w.queued) == 1  # liveness asks no reconcile of its own


def test_a_job_that_obeys_the_pace_is_never_refused_however_many_ranks() -> None:
    # 200 processes of one pod at the pace told, 2 minutes: far above the
    # job's minimum rate (10 a second), never refused.
    w = World(pacer=Pacer(seed=1))
    start = w.clock.monotonic()
    due = [(start, rank) for rank in range(200)]
    statuses: dict[int, int] = {}
    while due[0][0] < start + 120.0:
        at, rank = heapq.heappop(due)
        w.clock.step(max(0.0, at - w.clock.monotonic()))
        answer = post(w, rank=rank)
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        heapq.heappush(due, (w.clock.monotonic() + (answer.next or 1.0), rank))
    assert set(statuses) == {202}, statuses
    assert statuses[202] > 10 * 120


def test_a_job_that_ignores_the_pace_uses_up_only_its_own_share() -> None:
    w = World(qps=10.0, burst=50, pacer=Pacer(seed=1))
    for rank in range(8):
        post(w, rank=rank)
    flood = [post(w, rank=rank % 8).status for rank in range(2000)]  # no wait at all
    assert flood.count(429) > 1900
    assert post(w, "b", "tb").status == 202  # another job is taken
    w.clock.step(1.0)
    assert post(w, "b", "tb").status == 202
