"""The progress endpoint's checks, one request at a time (the TokenReview
answers stand in for the API server's; tests/integration/test_progress.py
meets the real one, with real projected tokens)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog.testing
from prometheus_client import REGISTRY

from t9k_operator.informers.factory import InformerFactory
from t9k_operator.integrations.progress.endpoint import (
    MAX_BODY,
    ProgressEndpoint,
    _reviewed,
)
from t9k_operator.integrations.progress.integration import (
    EndpointOptions,
    JobProgress,
    ProgressState,
)
from t9k_operator.integrations.progress.pods import job_path
from t9k_operator.integrations.progress.served import ServedProgress
from t9k_operator.integrations.progress.store import Coalescer, ProgressStore, Reporting
from t9k_operator.kinds.registry import KINDS
from t9k_operator.kube import ApiError
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.controllers import build_controllers
from t9k_operator.reconcilers.serving import Route
from t9k_operator.resources import Resource
from t9k_operator.runtime.certs import new_ca, new_serving
from t9k_operator.runtime.controller import ControllerContext
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from tests.fakes import FakeClock, FakeRecorder
from tests.unit.reconcilers.fake_kube import FakeKube

PTJ = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
AUDIENCE = "t9k-operator-progress"


class Cache:
    def __init__(self, *objs: Obj) -> None:
        self.objs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs}
        self.on_delete: list[Callable[[Obj], None]] = []

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objs.get((namespace, name))

    def add_event_handler(self, on_delete: Callable[[Obj], None], **_: Any) -> None:
        self.on_delete.append(on_delete)


class Reviews:
    """TokenReview answers by token."""

    def __init__(self, **pods: tuple[str, str, str]) -> None:
        self.pods = pods  # token -> (namespace, pod, uid)
        self.asked: list[Obj] = []
        self.fail = False

    def create(self, resource: Resource, body: Obj) -> Obj:
        assert resource.plural == "tokenreviews"
        self.asked.append(body)
        if self.fail:
            raise ApiError("the API server is away")
        who = self.pods.get(body["spec"]["token"])
        if who is None or body["spec"]["audiences"] != [AUDIENCE]:
            return {"status": {"authenticated": False, "error": "invalid bearer token"}}
        ns, pod, uid = who
        return {
            "status": {
                "authenticated": True,
                "audiences": [AUDIENCE],
                "user": {
                    "username": f"system:serviceaccount:{ns}:default",
                    "extra": {
                        "authentication.kubernetes.io/pod-name": [pod],
                        "authentication.kubernetes.io/pod-uid": [uid],
                    },
                },
            }
        }


def job(name: str, uid: str) -> Obj:
    return {"metadata": {"namespace": "ns", "name": name, "uid": uid}}


def pod(name: str, uid: str, owner: str, owner_uid: str, kind: str = PTJ.kind) -> Obj:
    ref = {"kind": kind, "name": owner, "uid": owner_uid, "controller": True}
    return {"metadata": {"namespace": "ns", "name": name, "uid": uid, "ownerReferences": [ref]}}


class World:
    def __init__(self, **kw: Any) -> None:
        self.clock = FakeClock()
        self.jobs = Cache(job("a", "ja"), job("b", "jb"))
        self.pods = Cache(
            pod("a-worker-0", "pa0", "a", "ja"),
            pod("b-worker-0", "pb0", "b", "jb"),
            pod("stale", "new-uid", "a", "ja"),
        )
        self.client = Reviews(
            ta=("ns", "a-worker-0", "pa0"),
            tb=("ns", "b-worker-0", "pb0"),
            tstale=("ns", "stale", "old-uid"),
            tother=("other", "a-worker-0", "pa0"),
        )
        self.store = ProgressStore()
        self.queued: list[tuple[str, float]] = []
        route = Route(PTJ, self.jobs, lambda key, delay: self.queued.append((key, delay)))  # type: ignore[arg-type]
        self.endpoint = ProgressEndpoint(
            self.client,  # type: ignore[arg-type]
            {PTJ.plural: route},
            self.pods,  # type: ignore[arg-type]
            self.store,
            Coalescer(),
            AUDIENCE,
            clock=self.clock,
            **kw,
        )

    def post(self, job: str = "a", token: str | None = "ta", body: Any = None) -> Any:
        data = json.dumps({"step": 3, "totalSteps": 10} if body is None else body).encode()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.endpoint.handle("POST", job_path("ns", PTJ.plural, job), headers, data)


def counted(result: str, reason: str | None = None) -> float:
    """The answers counted with ``result`` (and ``reason``; else of every reason)."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "t9k_progress_reports"
        for sample in metric.samples
        if sample.name == "t9k_progress_reports_total"
        and sample.labels["result"] == result
        and reason in (None, sample.labels["reason"])
    )


def test_a_pods_report_for_its_own_job_is_kept_and_queues_the_job() -> None:
    w = World()
    before = counted("accepted")
    answer = w.post()
    assert (answer.status, answer.result) == (202, "accepted")
    (kept,) = w.store.latest("ja")
    assert (kept.pod, kept.uid, kept.report.step) == ("a-worker-0", "pa0", 3)
    assert w.queued == [("ns/a", 0.0)]
    assert counted("accepted") == before + 1
    assert w.client.asked[0]["spec"]["audiences"] == [AUDIENCE]


@pytest.mark.parametrize(
    ("job", "token", "status", "result", "reason"),
    [
        ("a", None, 401, "unauthenticated", "no-token"),
        ("a", "forged", 401, "unauthenticated", "invalid"),  # the API server does not know it
        ("a", "tb", 403, "forbidden", "other-job"),  # a token of another job's pod
        ("b", "ta", 403, "forbidden", "other-job"),  # a report for another job
        ("a", "tstale", 403, "forbidden", "pod-replaced"),  # a pod since replaced (another uid)
        ("a", "tother", 403, "forbidden", "other-namespace"),  # a pod of another namespace
        ("gone", "ta", 404, "not_found", ""),  # no such job
    ],
)
def test_a_report_not_from_the_jobs_own_pod_is_refused_and_counted(
    job: str, token: str | None, status: int, result: str, reason: str
) -> None:
    w = World()
    before, before_reason = counted(result), counted(result, reason)
    answer = w.post(job, token)
    assert (answer.status, answer.result, getattr(answer, "reason", "")) == (status, result, reason)
    assert w.store.latest("ja") == [] and w.store.latest("jb") == []
    assert w.queued == []
    assert counted(result) == before + 1
    assert counted(result, reason) == before_reason + 1


def test_a_report_beyond_bounds_is_refused_with_the_reason() -> None:
    w = World()
    answer = w.post(body={"step": -1})
    assert (answer.status, answer.result) == (400, "invalid")
    assert "step" in answer.message
    big = w.endpoint.handle(
        "POST",
        job_path("ns", PTJ.plural, "a"),
        {"Authorization": "Bearer ta"},
        b" " * (MAX_BODY + 1),
    )
    assert (big.status, big.result) == (413, "too_large")
    assert w.store.latest("ja") == []


def test_a_flood_is_limited_per_job_and_reviews_each_token_once() -> None:
    w = World(qps=2.0, burst=5)
    answers = [w.post().status for _ in range(20)]
    assert answers[:5] == [202] * 5 and set(answers[5:]) == {429}
    assert len(w.client.asked) == 1  # the token's review is remembered
    assert w.post("b", "tb").status == 202  # another job has a rate of its own
    w.clock.step(1.0)
    assert [w.post().status for _ in range(3)] == [202, 202, 429]  # 2 a second
    # One reconcile per job at once; the reports after it, one interval on (each
    # report asks for the one due; the queue keeps one).
    assert list(dict.fromkeys(w.queued)) == [("ns/a", 0.0), ("ns/b", 0.0), ("ns/a", 4.0)]


def test_a_forged_token_is_reviewed_once_and_other_tokens_within_a_rate() -> None:
    w = World()
    w.endpoint._review_bucket = type(w.endpoint._review_bucket)(1.0, 2, w.clock)
    assert [w.post(token="forged").status for _ in range(5)] == [401] * 5
    assert len(w.client.asked) == 1
    assert w.post(token="forged-2").status == 401
    assert w.post(token="forged-3").status == 429  # reviews, all jobs together
    assert len(w.client.asked) == 2


def test_a_standby_and_an_api_server_away_answer_503() -> None:
    w = World(is_leader=lambda: False)
    assert (w.post().status, w.post().retry_after) == (503, 1.0)
    w = World()
    w.client.fail = True
    assert w.post().status == 503
    w.client.fail = False
    assert w.post().status == 202  # a failed review is not remembered


def test_only_post_to_a_jobs_path() -> None:
    w = World()
    assert w.endpoint.handle("GET", job_path("ns", PTJ.plural, "a"), {}, b"").status == 405
    assert w.endpoint.handle("POST", "/v1/namespaces/ns/jobs/a/progress", {}, b"").status == 404
    assert w.endpoint.handle("POST", "/metrics", {}, b"").status == 404


def test_a_deleted_job_takes_its_reports_with_it() -> None:
    w = World()
    assert w.post().status == 202
    for handler in w.jobs.on_delete:
        handler(job("a", "ja"))
    assert w.store.latest("ja") == []


@pytest.mark.parametrize(
    "status",
    [
        {"authenticated": True, "audiences": ["other"], "user": {}},
        {"authenticated": True, "audiences": [AUDIENCE], "user": {"username": "alice"}},
        {  # a ServiceAccount token not bound to a pod (a Secret's, or TokenRequest without one)
            "authenticated": True,
            "audiences": [AUDIENCE],
            "user": {"username": "system:serviceaccount:ns:default", "extra": {}},
        },
    ],
)
def test_only_a_pod_bound_token_for_the_audience_is_a_reporter(status: Obj) -> None:
    assert not _reviewed(status, AUDIENCE).authenticated


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (  # a pod's default token: the API server's audience (as kube-apiserver 1.34 says it)
            {
                "error": '[invalid bearer token, token audiences ["https://kubernetes.default.'
                'svc.cluster.local"] is invalid for the target audiences ["t9k-operator-progress"]]'
            },
            "audience",
        ),
        ({"error": "[invalid bearer token, service account token has expired]"}, "expired"),
        (  # the pod it is bound to was deleted (or replaced by one of another uid)
            {"error": "[invalid bearer token, service account token has been invalidated]"},
            "pod-replaced",
        ),
        ({"error": "invalid bearer token"}, "invalid"),
        ({"authenticated": True, "audiences": ["other"], "user": {}}, "audience"),
        (  # a TokenRequest without boundObjectRef
            {
                "authenticated": True,
                "audiences": [AUDIENCE],
                "user": {"username": "system:serviceaccount:ns:default", "extra": {}},
            },
            "not-bound",
        ),
        (
            {"authenticated": True, "audiences": [AUDIENCE], "user": {"username": "alice"}},
            "not-bound",
        ),
    ],
)
def test_a_refused_tokens_reason_is_what_the_api_server_said(status: Obj, reason: str) -> None:
    assert _reviewed(status, AUDIENCE).refusal == reason


# -- the wiring -----------------------------------------------------------------------------


def with_progress(tmp_path: Path, cert_dir: Path) -> tuple[list[Any], list[Any], object | None]:
    """The controllers and servers built with the progress integration on, and
    what its server provided the job reconcilers' caches."""
    fake = FakeKube()
    opts = EndpointOptions(
        "127.0.0.1:0", "svc", "ops", 443, None, AUDIENCE, str(cert_dir), "tls", 10.0, 50
    )
    ctx = ControllerContext(
        client=fake,  # type: ignore[arg-type]
        informers=InformerFactory(fake),  # type: ignore[arg-type]
        recorder=FakeRecorder(),  # type: ignore[arg-type]
        workers=1,
    )
    controllers = build_controllers(ctx, [ServedProgress(opts)])
    reconciler = controllers[0]._reconcile.__self__  # type: ignore[attr-defined]
    return controllers, ctx.servers, reconciler.caches.source("progress")


def test_the_operator_serves_the_endpoint_and_tells_the_replicas(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    ca, ca_key = new_ca("test CA")
    cert, key = new_serving(ca, ca_key, ["svc.ops.svc"])
    for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
        (certs / name).write_bytes(data)
    controllers, servers, provided = with_progress(tmp_path, certs)
    (server,) = servers
    try:
        assert len(controllers) == len(KINDS)  # one per kind: no TensorBoard integration
        assert isinstance(provided, Reporting)
        assert provided.settings.url == "https://svc.ops.svc"
        assert provided.ca == ca.decode()
    finally:
        server.stop()


def test_an_endpoint_that_cannot_start_leaves_the_jobs_running_without_it(
    tmp_path: Path,
) -> None:
    with structlog.testing.capture_logs() as logs:
        controllers, servers, provided = with_progress(tmp_path, tmp_path / "no-such-dir")
    assert servers == []
    assert len(controllers) == len(KINDS)  # every kind is still served
    assert provided is None  # the replicas are told of no endpoint
    assert any(e["event"].startswith("progress reporting is off") for e in logs)
    pod: Obj = {"spec": {"containers": [{"name": "c"}]}}
    JobProgress().decorate(ProgressState(), None, pod)  # type: ignore[arg-type]
    assert pod == {"spec": {"containers": [{"name": "c"}]}}


def test_no_one_but_the_jobs_pods_uses_up_its_rate() -> None:
    # Else anyone who reaches the endpoint could silence a job's reporters and
    # have the hang rule fail it.
    w = World(qps=2.0, burst=5)
    assert {w.post(token="forged").status for _ in range(20)} == {401}
    assert {w.post(token="tb").status for _ in range(20)} == {403}  # another job's pod
    assert w.post().status == 202


def test_a_flood_of_refusals_is_counted_and_logged_once_a_minute() -> None:
    w = World()
    before = counted("unauthenticated")
    with structlog.testing.capture_logs() as logs:
        for _ in range(50):
            w.post(token="forged")
        w.clock.step(61)
        w.post(token="forged")
    assert counted("unauthenticated") == before + 51
    assert [e["event"] for e in logs] == ["progress report refused"] * 2


def test_the_answers_carry_a_checkpoint_request_while_the_job_has_one_pending() -> None:
    w = World()
    assert "checkpoint" not in json.loads(w.post().body())
    saved = {"requestedAt": "2026-03-01T12:00:00Z", "reason": "Paused"}
    w.jobs.objs[("ns", "a")]["status"] = {"checkpoint": saved}
    for body in ({"step": 4}, {}, {"step": -1}):  # a report, a liveness one, a refused one
        answer = json.loads(w.post(body=body).body())
        assert answer["checkpoint"] is True, answer
        # Which request: a stop that asks anew while one stands is told apart.
        assert answer["checkpointRequestedAt"] == "2026-03-01T12:00:00Z", answer
    # Another job's replicas are not asked; nor, once the stop was made, this one's.
    assert "checkpoint" not in json.loads(w.post("b", "tb").body())
    saved["stoppedAt"] = "2026-03-01T12:00:30Z"
    assert "checkpoint" not in json.loads(w.post(body={"step": 5}).body())


def test_a_checkpoint_report_is_kept_beside_the_progress_and_queues_the_job() -> None:
    w = World()
    w.post(body={"step": 40, "totalSteps": 100})
    w.clock.step(10)
    answer = w.post(body={"checkpointStep": 40})
    assert answer.status == 202
    (received,) = w.store.latest("ja")
    assert received.report.step == 40 and received.report.total_steps == 100  # progress kept
    assert received.checkpoint is not None and received.checkpoint.step == 40
    assert received.checkpoint.at == received.last_heard
    assert w.queued == [("ns/a", 0.0), ("ns/a", 0.0)]
    # A later progress report keeps the checkpoint.
    w.clock.step(1)
    w.post(body={"step": 41})
    (received,) = w.store.latest("ja")
    assert received.report.step == 41 and received.checkpoint.step == 40


def test_the_last_report_is_carried_when_the_queue_drops_a_later_ask() -> None:
    """A work queue keeps an item's earlier ready time: a report that asks for
    the next reconcile while the one due has not yet been handed to a worker
    is dropped there. The reports after it ask again, so the last one (a
    checkpoint, after which a training waits) still gets its reconcile."""
    w = World()
    queue: RateLimitingQueue[str] = RateLimitingQueue("t", clock=w.clock, metrics=False)
    w.endpoint.routes[PTJ.plural] = Route(PTJ, w.jobs, queue.add_after)  # type: ignore[arg-type]

    def reconciled() -> bool:
        queue.move_ready_items()
        item, _ = queue.get(0.01)
        if item is not None:
            queue.done(item)
        return item is not None

    w.post(body={"step": 1})
    assert reconciled()
    w.clock.step(0.5)
    w.post(body={"step": 2})  # the next: due at 5
    w.clock.step(4.6)
    w.post(body={"step": 3})  # asks for 10; dropped: the one due at 5 is not handed over yet
    assert reconciled()  # the one due at 5 (reads the store: step 3)
    w.clock.step(0.9)
    w.post(body={"checkpointStep": 3})  # the last report
    w.clock.step(5.0)
    assert reconciled(), "the last report never reconciled"
    queue.shut_down()
