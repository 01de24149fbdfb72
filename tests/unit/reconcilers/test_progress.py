"""Training progress, the pure parts and the store: status.progress from the
pods' reports (throughput, time left), the store the endpoint will fill, the
coalescer that bounds status writes per job, and the integration that hands
the reports to the engine's hang rule."""

from __future__ import annotations

import copy
import itertools
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from t9k_operator.integrations.progress.integration import (
    EndpointOptions,
    JobProgress,
    ProgressState,
)
from t9k_operator.integrations.progress.pods import Settings
from t9k_operator.integrations.progress.reports import ProgressReport
from t9k_operator.integrations.progress.status import (
    Received,
    Sample,
    eta_seconds,
    render,
    throughput,
)
from t9k_operator.integrations.progress.store import MAX_PODS, Coalescer, ProgressStore
from t9k_operator.kinds.asks import CheckpointOnStop, HangPolicy
from t9k_operator.kinds.registry import KINDS
from t9k_operator.kinds.view import Checkpointed, Heartbeat, asks_of
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import Reason, get_condition
from t9k_operator.reconcilers.pipeline import plan as planning
from t9k_operator.reconcilers.pipeline.contract import JobInput
from tests.unit.reconcilers.test_engine import KIND, T0, job, running


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def received(
    step: int | None,
    when: float,
    samples: tuple[tuple[float, int], ...] = (),
    pod: str = "j-master-0",
    **report: Any,
) -> Received:
    return Received(
        pod=pod,
        uid=f"uid-{pod}",
        at=at(when),
        report=ProgressReport(step=step, **report),
        samples=tuple(Sample(at(t), s) for t, s in samples),
    )


# -- throughput and time left ------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "r", "rate"),
    [
        ("one report", received(100, 60), None),
        ("no step", received(None, 60, ((0, 0),), epoch=1), None),
        ("steady", received(100, 100, ((0, 0), (50, 50))), 1.0),
        ("window: older samples left out", received(700, 700, ((0, 0), (500, 600))), 0.5),
        ("all samples too old", received(700, 1000, ((0, 0), (500, 600))), None),
        ("went back: the run since", received(30, 130, ((0, 500), (100, 0))), 1.0),
        ("went back, no sample since", received(30, 130, ((0, 10), (100, 500))), None),
        ("no step made", received(5, 100, ((50, 5),)), None),
    ],
)
def test_throughput(case: str, r: Received, rate: float | None) -> None:
    assert throughput(r) == rate, case


@pytest.mark.parametrize(
    ("step", "total", "rate", "left"),
    [
        (None, 100, 1.0, None),
        (10, None, 1.0, None),
        (10, 100, 0.0, None),
        (10, 100, 2.0, 45.0),
        (120, 100, 2.0, 0.0),
    ],
)
def test_eta_seconds(step: int | None, total: int | None, rate: float, left: float | None) -> None:
    assert eta_seconds(step, total, rate) == left


def test_status_progress_from_the_newest_report() -> None:
    master = received(
        420, 120, ((0, 0), (60, 210)), total_steps=1000, epoch=2, metrics={"loss": 0.3, "acc": 0.9}
    )
    worker = received(400, 100, pod="j-worker-0")
    assert render([worker, master]) == {
        "step": 420,
        "totalSteps": 1000,
        "epoch": 2.0,
        "metrics": {"acc": 0.9, "loss": 0.3},
        "replica": "j-master-0",
        "lastReportTime": "2026-03-01T12:02:00Z",
        "stepsPerSecond": 3.5,
        "eta": "2m45s",  # 580 steps at 3.5/s
        "summary": "420/1000 (42%)",
    }


def test_status_progress_keeps_a_total_an_earlier_report_gave() -> None:
    first = received(10, 10, total_steps=500, pod="j-worker-0")
    newest = received(20, 20)
    out = render([first, newest])
    assert out is not None
    assert (out["totalSteps"], out["summary"]) == (500, "20/500 (4%)")
    assert "eta" not in out and "stepsPerSecond" not in out


def test_no_reports_no_progress() -> None:
    assert render([]) is None


# -- the store ------------------------------------------------------------------------


def report(step: int | None = None, **kw: Any) -> ProgressReport:
    return ProgressReport(step=step, **kw)


def test_the_store_keeps_the_latest_report_per_pod_with_spaced_samples() -> None:
    store = ProgressStore(samples=3, sample_every=10)
    for t in range(0, 60, 2):  # a report every 2 s
        assert store.record("job", "j-master-0", "pod-a", report(t), at(t))
    (r,) = store.latest("job")
    assert (r.report.step, r.at) == (58, at(58))
    # Samples at least 10 s apart, the newest 3.
    assert [s.step for s in r.samples] == [30, 40, 50]
    assert throughput(r) == 1.0


def test_a_replaced_pod_starts_afresh_and_an_older_report_is_dropped() -> None:
    store = ProgressStore()
    store.record("job", "j-master-0", "pod-a", report(100), at(0))
    store.record("job", "j-master-0", "pod-a", report(200), at(20))
    assert not store.record("job", "j-master-0", "pod-a", report(150), at(10))
    store.record("job", "j-master-0", "pod-b", report(5), at(30))  # the pod was recreated
    (r,) = store.latest("job")
    assert (r.uid, r.report.step, r.samples) == ("pod-b", 5, ())


def test_a_step_that_goes_back_drops_the_samples_of_the_run_before() -> None:
    store = ProgressStore(sample_every=0)
    for t, step in ((0, 100), (10, 200), (20, 50), (30, 60)):
        store.record("job", "p", "uid", report(step), at(t))
    (r,) = store.latest("job")
    assert [s.step for s in r.samples] == [50]
    assert throughput(r) == 1.0


def test_metrics_only_reports_keep_the_samples() -> None:
    store = ProgressStore(sample_every=0)
    store.record("job", "p", "uid", report(10), at(0))
    store.record("job", "p", "uid", report(metrics={"loss": 1.0}), at(5))
    store.record("job", "p", "uid", report(20), at(10))
    (r,) = store.latest("job")
    assert [s.step for s in r.samples] == [10]


def test_the_store_forgets_jobs_and_bounds_the_pods_per_job() -> None:
    store = ProgressStore()
    store.record("a", "p0", "u0", report(1), at(0))
    store.record("a", "p1", "u1", report(1), at(0))
    store.record("b", "p0", "u2", report(1), at(0))
    assert sorted(r.pod for r in store.latest("a")) == ["p0", "p1"]
    store.forget("a")
    assert store.latest("a") == []
    assert len(store.latest("b")) == 1
    for i in range(MAX_PODS - 1):
        assert store.record("b", f"q{i}", f"v{i}", report(1), at(0))
    assert not store.record("b", "one-too-many", "x", report(1), at(0))
    assert store.record("b", "p0", "u2", report(2), at(1))  # a known pod still reports


# -- the coalescer ------------------------------------------------------------------------


def test_a_flood_of_reports_makes_one_reconcile_per_interval() -> None:
    c = Coalescer(interval=5)
    assert c.report("job", 0.0) == 0.0  # after quiet: at once
    assert c.report("job", 0.0) is None  # that reconcile has not run: it carries this
    assert c.report("job", 0.1) == 4.9  # it may have run: the next, an interval on
    assert [c.report("job", t / 10) for t in range(2, 50)] == [None] * 48
    assert c.report("job", 5.1) == 4.9
    assert c.report("job", 30.0) == 0.0  # quiet again


def test_reconciles_come_at_most_once_per_interval_and_carry_the_last_report() -> None:
    c = Coalescer(interval=5)
    reconciles: list[float] = []
    t = 0.0
    last_report = 0.0
    while t < 60:
        delay = c.report("job", t)
        if delay is not None:
            reconciles.append(t + delay)
        last_report = t
        t = round(t + 0.05, 2)  # 20 reports a second
    gaps = [b - a for a, b in itertools.pairwise(reconciles)]
    assert len(reconciles) >= 12
    assert min(gaps) >= 5
    assert reconciles[-1] >= last_report  # the burst's last report is carried


def test_coalescing_is_per_job_and_forgotten_with_the_job() -> None:
    c = Coalescer(interval=5)
    assert c.report("job", 0.0) == 0.0
    assert c.report("other", 0.5) == 0.0  # per job
    c.forget("job")
    assert c.report("job", 1.0) == 0.0


# -- the integration ----------------------------------------------------------------------


CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SETTINGS = Settings("https://t9k-operator-progress.t9k-system.svc", "t9k-operator-progress")


class Source:
    """What a serving endpoint provides the integration (a ProgressSource)."""

    def __init__(self, *received: Received, ca: str = "") -> None:
        self.received, self.settings, self.ca = received, SETTINGS, ca

    def latest(self, job_uid: str) -> list[Received]:
        return list(self.received) if job_uid == "u" else []


class Caches:
    """The caches an integration observes: the job's ConfigMaps, and what the
    progress endpoint provides (``source``: None, no endpoint serves)."""

    def __init__(self, source: Source | None, *maps: Obj) -> None:
        self.maps = {m["metadata"]["name"]: m for m in maps}
        self.provided = source

    def get(self, resource: Any, namespace: str | None, name: str) -> Obj | None:
        assert resource.plural == "configmaps"
        return self.maps.get(name)

    def owned(self, resource: Any, uid: str) -> list[Obj]:
        return []

    def source(self, name: str) -> object | None:
        assert name == "progress"
        return self.provided


MASTER_UID = "uid-of-j-master-0"
"""The uid of the job's master pod, whose reports the tests below receive."""


def observe_and_plan(source: Source, now: datetime, **kw: Any) -> Any:
    view = job(**kw)
    integration = JobProgress()
    stored = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    found = integration.observe(
        JobInput(kind=KINDS[0], stored=stored, job=None, view=view, now=now),
        Caches(source),
    )
    assert found is not None
    state, seen_view = found
    pods = running(view)
    pods[("master", 0)] = replace(pods[("master", 0)], uid=MASTER_UID)
    return state, planning.plan(
        KIND,  # type: ignore[arg-type]
        seen_view,
        [planning.Seen(integration, state)],
        pods,
        now,
    )


RUNNING = {
    "phase": "Running",
    "startTime": "2026-03-01T11:00:00Z",
    "conditions": [{"type": "Running", "status": "True", "reason": "-", "message": ""}],
}


def test_the_integration_puts_the_reports_in_the_view_and_the_status() -> None:
    master = replace(received(50, 0, total_steps=100), uid=MASTER_UID)
    state, p = observe_and_plan(Source(master), at(30), status=RUNNING)
    assert [(r.uid, r.at) for r in state.received] == [(MASTER_UID, at(0))]
    assert p.status["progress"]["summary"] == "50/100 (50%)"
    assert p.status["phase"] == "Running"


@pytest.mark.parametrize("on_hang", ["Fail", "Restart"])
def test_the_engine_hears_of_the_reports_only_under_the_jobs_hang_policy(on_hang: str) -> None:
    master = replace(received(50, 0), uid=MASTER_UID)
    integration = JobProgress()
    stored = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    for view, beats in [
        (job(), ()),
        (
            job(asks=asks_of(HangPolicy(600, on_hang))),
            (Heartbeat(MASTER_UID, at(0), 600, restart=on_hang == "Restart"),),
        ),
    ]:
        found = integration.observe(
            JobInput(KINDS[0], stored, None, view, at(30)), Caches(Source(master))
        )
        assert found is not None
        state, seen = found
        assert integration.heartbeats(state, seen) == beats
        assert seen.heartbeats == (), "the view carries none until the plan gathers them"


def test_through_the_integration_a_silent_job_fails_hung() -> None:
    master = replace(received(50, 0), uid=MASTER_UID)
    _, p = observe_and_plan(
        Source(master), at(700), status=RUNNING, asks=asks_of(HangPolicy(600, "Fail"))
    )
    assert p.finished is not None and p.finished.reason == Reason.HUNG
    hung = get_condition(p.status, "Hung")
    assert hung is not None and "j-master-0" in hung["message"]
    # The progress it made stays in the status of the failed job.
    assert p.status["progress"]["step"] == 50


def test_a_job_without_reports_has_no_progress_and_is_never_hung() -> None:
    _, p = observe_and_plan(Source(), at(10_000), status=RUNNING, asks=asks_of(HangPolicy(600)))
    assert "progress" not in p.status
    assert get_condition(p.status, "Hung") is None
    assert p.finished is None


def test_a_finished_job_keeps_the_progress_last_written() -> None:
    last = {"step": 99, "summary": "99/100 (99%)"}
    done = {**RUNNING, "phase": "Succeeded", "progress": last}
    master = replace(received(100, 0), uid=MASTER_UID)
    _, p = observe_and_plan(Source(master), at(30), status=done)
    assert p.status["progress"] == last


# -- the integration, connected to an endpoint ---------------------------------------------


def connected(*maps: Obj, phase: str = "Running") -> tuple[JobProgress, Any, Any]:
    integration = JobProgress()
    view = job(status={**RUNNING, "phase": phase})
    stored = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    found = integration.observe(
        JobInput(KINDS[0], stored, None, view, at(0)), Caches(Source(ca=CA), *maps)
    )
    assert found is not None
    return integration, *found


def test_the_job_gets_a_configmap_of_the_endpoints_ca_owned_by_it() -> None:
    integration, state, view = connected()
    (action,) = integration.prepare(state, view)
    assert (action.verb, action.soft) == ("create", True)
    cm = action.body
    assert cm["metadata"]["name"] == "j-progress-ca"
    assert cm["data"] == {"ca.crt": CA}
    (owner,) = cm["metadata"]["ownerReferences"]
    assert owner["kind"] == "PyTorchTrainingJob" and owner["uid"] == "u" and owner["controller"]
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "t9k-operator"


def test_the_ca_configmap_follows_a_renewed_ca_and_leaves_anothers_alone() -> None:
    integration, state, view = connected()
    mine = copy.deepcopy(integration.prepare(state, view)[0].body)
    assert integration.prepare(*connected(mine)[1:]) == []  # as it should be
    mine["data"] = {"ca.crt": "an old CA"}
    (action,) = integration.prepare(*connected(mine)[1:])
    assert action.verb == "replace" and action.body["data"] == {"ca.crt": CA}
    theirs = {**mine, "metadata": {**mine["metadata"], "ownerReferences": []}}
    assert integration.prepare(*connected(theirs)[1:]) == []
    assert integration.prepare(*connected(phase="Succeeded")[1:]) == []  # finished


def test_every_container_learns_where_and_how_to_report() -> None:
    integration, state, view = connected()
    pod: Obj = {
        "spec": {
            "containers": [
                {"name": "trainer", "env": [{"name": "T9K_PROGRESS_TIMEOUT", "value": "2"}]},
                {"name": "sidecar", "env": [{"name": "T9K_PROGRESS_URL", "value": "mine"}]},
            ]
        }
    }
    integration.decorate(state, view, pod)
    (volume,) = pod["spec"]["volumes"]
    token, ca = volume["projected"]["sources"]
    assert token["serviceAccountToken"] == {
        "audience": "t9k-operator-progress",
        "expirationSeconds": 3600,
        "path": "token",
    }
    assert ca["configMap"]["name"] == "j-progress-ca" and ca["configMap"]["optional"]
    trainer, sidecar = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env == {
        "T9K_PROGRESS_TIMEOUT": "2",
        "T9K_PROGRESS_URL": "https://t9k-operator-progress.t9k-system.svc"
        "/v1/namespaces/ns/pytorchtrainingjobs/j/progress",
        "T9K_PROGRESS_TOKEN_FILE": "/var/run/secrets/t9k.dev/progress/token",
        "T9K_PROGRESS_CA_FILE": "/var/run/secrets/t9k.dev/progress/ca.crt",
    }
    assert {e["name"]: e["value"] for e in sidecar["env"]}["T9K_PROGRESS_URL"] == "mine"
    for c in (trainer, sidecar):
        assert c["volumeMounts"] == [
            {
                "name": "t9k-progress",
                "mountPath": "/var/run/secrets/t9k.dev/progress",
                "readOnly": True,
            }
        ]


def test_a_template_with_a_volume_of_that_name_is_left_as_it_is() -> None:
    integration, state, view = connected()
    pod: Obj = {
        "spec": {
            "volumes": [{"name": "t9k-progress", "emptyDir": {}}],
            "containers": [{"name": "c"}],
        }
    }
    before = copy.deepcopy(pod)
    integration.decorate(state, view, pod)
    assert pod == before


def test_an_integration_not_connected_tells_the_replicas_nothing() -> None:
    integration = JobProgress()
    pod: Obj = {"spec": {"containers": [{"name": "c"}]}}
    integration.decorate(ProgressState(), job(), pod)
    assert pod == {"spec": {"containers": [{"name": "c"}]}}
    # Observed without an endpoint serving: neither the CA ConfigMap nor the
    # reporter's environment, and no reports.
    stored = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    found = integration.observe(JobInput(KINDS[0], stored, None, job(), at(0)), Caches(None))
    assert found is not None
    state, view = found
    assert (
        state.settings is None
        and state.received == ()
        and integration.heartbeats(state, view) == ()
    )
    assert integration.prepare(state, view) == []
    integration.decorate(state, view, pod)
    assert pod == {"spec": {"containers": [{"name": "c"}]}}


@pytest.mark.parametrize(
    ("url", "port", "base", "first_host"),
    [
        (None, 443, "https://svc.ops.svc", "svc.ops.svc"),
        (None, 8443, "https://svc.ops.svc:8443", "svc.ops.svc"),
        ("https://10.0.0.9:8443/", 443, "https://10.0.0.9:8443", "10.0.0.9"),
        ("https://[fd00::1]:8443", 443, "https://[fd00::1]:8443", "fd00::1"),
    ],
)
def test_the_endpoints_address_and_the_names_its_certificate_carries(
    url: str | None, port: int, base: str, first_host: str
) -> None:
    opts = EndpointOptions(":8443", "svc", None, port, url, "aud", None, "tls", 10.0, 50)
    assert opts.base_url("ops") == base
    hosts = opts.hosts("ops")
    assert hosts[0] == first_host
    assert {"svc.ops.svc", "svc.ops.svc.cluster.local", "svc.ops", "svc"} <= set(hosts)


# -- checkpoints ---------------------------------------------------------------------------


def test_a_checkpoint_alone_shows_no_progress_and_reaches_the_engine_only_when_asked() -> None:
    only = replace(received(None, 10, checkpoint_step=40), checkpoint=Sample(at(10), 40))
    assert render([only]) is None
    state = ProgressState((only,))
    integration = JobProgress()
    assert integration.checkpoints(state, job()) == ()
    asked = job(asks=asks_of(CheckpointOnStop(60)))
    assert integration.checkpoints(state, asked) == (
        Checkpointed("uid-j-master-0", "j-master-0", 40, at(10)),
    )
