"""A job handed over to MultiKueue, seen from the manager cluster: the SDK
reads the worker cluster from the job's Workload (sdk/views.py, the client's
``workloads``), ``t9k list`` shows it as CLUSTER, ``t9k describe`` as
``Cluster:``, and ``t9k logs`` says where the logs are instead of reading
pods the manager does not have."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator import kube
from t9k_operator.cli import follow, main, render, show
from t9k_operator.console import rows
from t9k_operator.resources import EVENTS, PODS, WORKLOADS, Resource
from t9k_operator.sdk import Client, views

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NS = "team-a"
UID = "0123abcd-4567-89ef-0123-456789abcdef"
WL_NAME = "mk-0123abcd"  # the job's name and the first 8 characters of its uid


def job(name: str = "mk", uid: str = UID, managed: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicaSpecs": [
            {
                "type": "worker",
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "t:1"}]}},
            }
        ]
    }
    if managed:
        spec["managedBy"] = "kueue.x-k8s.io/multikueue"
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid,
            "creationTimestamp": "2026-03-01T11:00:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "team"},
        },
        "spec": spec,
        "status": {"phase": "Running", "startTime": "2026-03-01T11:30:00Z"},
    }


def workload(name: str = WL_NAME, namespace: str = NS, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    }


# -- the SDK ------------------------------------------------------------------------


def test_the_worker_cluster_is_the_one_the_jobs_workload_names() -> None:
    placed = workload(clusterName="worker-2")
    assert views.worker_cluster(job(), [placed]) == "worker-2"
    # Another job's Workload (another uid), or one of another namespace, says nothing.
    assert views.worker_cluster(job(uid="ffffffff-0000"), [placed]) is None
    assert views.worker_cluster(job(), [workload(namespace="team-b", clusterName="w")]) is None
    # A job not handed over runs here, whatever a Workload says.
    assert views.worker_cluster(job(managed=False), [placed]) is None


def test_a_job_not_dispatched_yet_has_no_worker_but_may_have_nominees() -> None:
    choosing = workload(nominatedClusterNames=["worker-1", "worker-2"])
    assert views.worker_cluster(job(), [choosing]) is None
    assert views.nominated_clusters(job(), [choosing]) == ("worker-1", "worker-2")
    assert views.worker_cluster(job(), []) is None
    assert views.handed_over(job()) and not views.handed_over(job(managed=False))


class FakeKube:
    """A manager cluster: the job ``mk``, no pods; Workloads when Kueue is installed."""

    def __init__(
        self, workloads: list[dict[str, Any]] | str | None, jobs: list[dict[str, Any]]
    ) -> None:
        self.workloads = workloads
        self.jobs = jobs
        self.asked: list[tuple[str, str | None, str | None]] = []

    def list_all(
        self, resource: Resource, namespace: str | None = None, *, label_selector: Any = None
    ) -> tuple[list[dict[str, Any]], str]:
        self.asked.append((resource.plural, namespace, label_selector))
        if resource == WORKLOADS:
            if self.workloads is None:
                raise kube.NotFound("the server could not find the requested resource", status=404)
            if isinstance(self.workloads, str):  # the API server's refusal
                raise kube.Forbidden(self.workloads, status=403)
            return list(self.workloads), "1"
        if resource in (PODS, EVENTS):
            return [], "1"
        if resource.kind == "PyTorchTrainingJob":
            return [dict(j) for j in self.jobs], "1"
        raise kube.NotFound("the server could not find the requested resource", status=404)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        for j in self.jobs:
            if resource.kind == j["kind"] and j["metadata"]["name"] == name:
                return dict(j)
        raise kube.NotFound(f'"{name}" not found', status=404)

    def pod_logs(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the manager has no pod of a handed-over job to read")

    def close(self) -> None:
        pass


def test_the_client_lists_a_jobs_workloads_and_none_without_kueue() -> None:
    fake = FakeKube([workload(clusterName="worker-2")], [job()])
    client = Client(kube_client=fake, namespace=NS)  # type: ignore[arg-type]
    assert client.workloads(job()) == [workload(clusterName="worker-2")]
    assert client.workloads(all_namespaces=True) == [workload(clusterName="worker-2")]
    assert fake.asked == [
        ("workloads", NS, "t9k.dev/job-name=mk,t9k.dev/job-kind=PyTorchTrainingJob"),
        ("workloads", None, "app.kubernetes.io/managed-by=t9k-operator"),
    ]
    no_kueue = Client(kube_client=FakeKube(None, [job()]), namespace=NS)  # type: ignore[arg-type]
    assert no_kueue.workloads(job()) == []
    assert no_kueue.workloads() == []


# -- t9k list and describe ----------------------------------------------------------------


def test_list_has_a_cluster_column_when_a_job_is_handed_over() -> None:
    jobs = [job(), job("local", "99999999-0000", managed=False), job("new", "aaaaaaaa-0000")]
    text = render.jobs_table(jobs, [], NOW, workloads=[workload(clusterName="worker-2")])
    lines = [line.split() for line in text.splitlines()]
    assert lines[0][-3:] == ["NODES", "QUEUE", "CLUSTER"]
    assert [(row[0], row[-1]) for row in lines[1:]] == [
        ("mk", "worker-2"),
        ("local", "-"),
        ("new", "dispatching"),
    ]
    # No job handed over: no such column; -o wide has it always, before AGE.
    plain = render.jobs_table([job(managed=False)], [], NOW)
    assert "CLUSTER" not in plain
    wide = render.jobs_table([job(managed=False)], [], NOW, wide=True).splitlines()
    assert wide[0].split()[-3:] == ["QUEUE", "CLUSTER", "AGE"]
    assert wide[1].split()[-3:] == ["team", "-", "1h"]
    # The console's Jobs page keeps t9k list -A's columns without it.
    assert len(rows.row_of(job(), [], NOW).cells) == len(rows.headers())
    assert "CLUSTER" not in rows.headers()


def test_describe_names_the_worker_after_the_queue() -> None:
    text = render.describe(job(), [], [], NOW, workloads=[workload(clusterName="worker-2")])
    lines = text.splitlines()
    at = lines.index("Queue:       team")
    assert lines[at + 1] == "Cluster:     worker-2 (MultiKueue worker)"
    choosing = workload(nominatedClusterNames=["worker-1", "worker-2"])
    text = render.describe(job(), [], [], NOW, workloads=[choosing])
    assert "Cluster:     dispatching (MultiKueue; nominated: worker-1, worker-2)\n" in text
    assert "Cluster:" not in render.describe(job(managed=False), [], [], NOW)


def _on(monkeypatch: pytest.MonkeyPatch, fake: FakeKube) -> None:
    def client_for(args: Any) -> Client:
        return Client(kube_client=fake, namespace=NS)  # type: ignore[arg-type]

    monkeypatch.setattr(show, "client_for", client_for)
    monkeypatch.setattr(follow, "client_for", client_for)


def test_the_list_and_describe_commands_read_the_workloads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _on(monkeypatch, FakeKube([workload(clusterName="worker-2")], [job()]))
    assert main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-1] == "CLUSTER" and out[1].split()[-1] == "worker-2"
    assert main(["describe", "mk"]) == 0
    assert "Cluster:     worker-2 (MultiKueue worker)\n" in capsys.readouterr().out


# -- t9k logs ---------------------------------------------------------------------------


def test_logs_of_a_handed_over_job_say_which_worker_runs_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _on(monkeypatch, FakeKube([workload(clusterName="worker-2")], [job()]))
    assert main(["logs", "mk", "--replica", "worker-1", "-f"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "error: job mk runs in worker cluster worker-2 (handed over to MultiKueue); this "
        "cluster has none of its pods: read its logs there, with t9k logs mk -n team-a "
        "--replica worker-1 -f --kubeconfig <worker-2's kubeconfig> "
        "(or --context <worker-2's context>)\n"
    )


def test_logs_of_a_job_not_dispatched_yet_say_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _on(monkeypatch, FakeKube([workload(nominatedClusterNames=["worker-1"])], [job()]))
    assert main(["logs", "mk"]) == 1
    assert capsys.readouterr().err == (
        "error: job mk is handed over to MultiKueue and not dispatched to a worker cluster "
        "yet (nominated: worker-1); this cluster has none of its pods: t9k describe mk names "
        "the worker once one holds it\n"
    )


# -- a person who may not read Workloads ------------------------------------------------

REFUSED = (
    'workloads.kueue.x-k8s.io is forbidden: User "alice" cannot list resource "workloads" '
    'in API group "kueue.x-k8s.io" in the namespace "team-a"'
)


def test_without_the_right_to_read_workloads_the_worker_is_unknown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Reading jobs is enough for list, describe and logs: they say the worker
    # is unknown rather than fail on the Workloads they could not read.
    _on(monkeypatch, FakeKube(REFUSED, [job(), job("local", "99999999-0000", managed=False)]))
    assert main(["list"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines[0][-1] == "CLUSTER"
    assert sorted((row[0], row[-1]) for row in lines[1:]) == [("local", "-"), ("mk", "unknown")]
    assert main(["describe", "mk"]) == 0
    assert (
        "Cluster:     unknown (handed over to MultiKueue; your rights here do not let you "
        "read its Kueue Workload, which names it)\n"
    ) in capsys.readouterr().out
    assert main(["logs", "mk"]) == 1
    assert capsys.readouterr().err == (
        "error: job mk is handed over to MultiKueue and runs in a worker cluster; this cluster "
        "has none of its pods, and your rights here do not let you read its Kueue Workload, "
        "which names it: ask who runs the cluster which worker runs it, then run "
        "t9k logs mk -n team-a against that cluster\n"
    )
