"""GenericJob: the manual's examples parse, the template variables are filled
in beside kubelet's own references, a variable the job lacks is named, the
per-replica Services, and the rules and restart limits the engine applies."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.builders import genericjob as build
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.registry import by_kind
from t9k_operator.reconcilers.engine.planner import plan
from tests.manual_examples import MANUAL, examples

KIND = by_kind("GenericJob")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def stored(spec: dict[str, Any], name: str = "gj") -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": name, "namespace": "ns", "uid": "u", "generation": 1},
        "spec": copy.deepcopy(spec),
    }


def container(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "main", "image": "debian", "command": command}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return c


SPEC: dict[str, Any] = {
    "service": {"ports": [{"name": "msg", "port": 5000}]},
    "replicaSpecs": [
        {
            "type": "server",
            "template": {"spec": {"containers": [container(["serve", "$(rank)"])]}},
        },
        {
            "type": "client",
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        container(
                            ["talk", "$(service.server[0].host):$(service.port[msg])", "$(HOME)"],
                            {
                                "WHO": "$(type)-$(rank) of $(replicas[client])",
                                "LITERAL": "$$(rank) $(rank",
                            },
                        )
                    ]
                }
            },
        },
    ],
}


@pytest.mark.skipif(not MANUAL.exists(), reason="shared/specs is not beside the clone")
def test_every_example_of_the_manual_parses() -> None:
    found = examples()
    assert len(found) >= 4
    for doc in found:
        doc["metadata"].update(namespace="ns", uid="u")
        assert read(KIND, doc).job is not None, doc


def test_the_variables_are_filled_in_and_kubelets_references_kept() -> None:
    job = read(KIND, stored(SPEC)).job
    assert job is not None
    pod = KIND.build_pod(job, "client", 1, build.NORMAL, {})
    c = pod["spec"]["containers"][0]
    assert c["command"] == ["talk", "gj-server-0:5000", "$(HOME)"]
    assert c["env"] == [
        {"name": "WHO", "value": "client-1 of 2"},
        {"name": "LITERAL", "value": "$$(rank) $(rank"},
    ]
    assert pod["metadata"]["name"] == "gj-client-1"
    assert pod["spec"]["hostname"] == "gj-client-1" and pod["spec"]["subdomain"] == "gj"
    server = KIND.build_pod(job, "server", 0, build.NORMAL, {})
    assert server["spec"]["containers"][0]["command"] == ["serve", "0"]


def test_each_replica_gets_its_own_headless_service() -> None:
    job = read(KIND, stored(SPEC)).job
    assert job is not None
    services = {s["metadata"]["name"]: s for s in KIND.extras(job)}
    assert sorted(services) == ["gj", "gj-client-0", "gj-client-1", "gj-server-0"]
    one = services["gj-client-1"]["spec"]
    assert one["clusterIP"] == "None" and one["publishNotReadyAddresses"]
    assert one["selector"]["t9k.dev/replica-type"] == "client"
    assert one["selector"]["t9k.dev/replica-index"] == "1"
    assert one["ports"] == [{"name": "msg", "port": 5000, "targetPort": 5000, "protocol": "TCP"}]
    plain = read(KIND, stored({**SPEC, "service": None})).job
    assert plain is not None and [s["metadata"]["name"] for s in KIND.extras(plain)] == ["gj"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("$(replicas[ps])", "$(replicas[ps]): replica type 'ps' is not in spec.replicaSpecs"),
        ("$(service.server[1].host)", "replica type server has no rank '1'"),
        ("$(service.ps[0].host)", "replica type 'ps' is not in spec.replicaSpecs"),
        ("$(service.port[http])", "spec.service.ports has no port named 'http'"),
        ("$(service.server[0].ip)", "not a GenericJob variable"),
    ],
)
def test_a_variable_the_job_lacks_fails_it_naming_field_and_variable(text: str, named: str) -> None:
    spec = copy.deepcopy(SPEC)
    spec["replicaSpecs"][1]["template"]["spec"]["containers"][0]["args"] = ["ok", text]
    view = read(KIND, stored(spec)).view
    assert view.spec_error is not None and view.roles == ()
    assert view.spec_error.startswith(
        "spec.replicaSpecs[1].template.spec.containers[0].args[1]: "
    ), view.spec_error
    assert named in view.spec_error


def test_a_service_variable_without_spec_service_fails_the_job() -> None:
    view = read(KIND, stored({**SPEC, "service": None})).view
    assert view.spec_error is not None and "only with spec.service" in view.spec_error


def _pods(**phases: str) -> dict[tuple[str, int], ReplicaState]:
    out = {}
    for label, phase in phases.items():
        type_, index = label.rsplit("_", 1)
        code = 1 if phase == "Failed" else 0 if phase == "Succeeded" else None
        out[(type_, int(index))] = ReplicaState(f"gj-{type_}-{index}", label, phase, exit_code=code)
    return out


def _view(spec: dict[str, Any]) -> Any:
    running = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return read(KIND, {**stored(spec), "status": running}).view


def test_success_and_failure_follow_the_rules() -> None:
    spec = {
        **SPEC,
        "successRules": [{"server": [0]}],
        "failureRules": [{"client": [0, 1]}],
    }
    view = _view(spec)
    out = plan(KIND, view, _pods(server_0="Running", client_0="Failed", client_1="Running"), NOW)
    assert out.finished is None  # one client failed for good: no rule is met
    out = plan(KIND, view, _pods(server_0="Running", client_0="Failed", client_1="Failed"), NOW)
    assert out.finished is not None and out.finished.phase == "Failed"
    assert "client-0, client-1" in out.finished.message
    out = plan(KIND, view, _pods(server_0="Succeeded", client_0="Failed", client_1="Running"), NOW)
    assert out.finished is not None and out.finished.phase == "Succeeded"


def test_without_rules_every_replica_decides_success_and_any_failure_fails() -> None:
    view = _view(SPEC)
    out = plan(
        KIND, view, _pods(server_0="Succeeded", client_0="Succeeded", client_1="Running"), NOW
    )
    assert out.finished is None
    done = _pods(server_0="Succeeded", client_0="Succeeded", client_1="Succeeded")
    finished = plan(KIND, view, done, NOW).finished
    assert finished is not None and finished.phase == "Succeeded"
    out = plan(KIND, view, _pods(server_0="Running", client_0="Failed", client_1="Running"), NOW)
    assert out.finished is not None and out.finished.phase == "Failed"


def test_a_replica_type_restarts_within_its_own_limit() -> None:
    spec = copy.deepcopy(SPEC)
    spec["replicaSpecs"][1]["restartPolicy"] = {"policy": "OnFailure", "limit": 1}
    view = _view(spec)
    assert view.backoff_limit == 1
    pods = _pods(server_0="Running", client_0="Failed", client_1="Running")
    out = plan(KIND, view, pods, NOW)
    assert out.finished is None and [s.name for s in out.delete] == ["gj-client-0"]
    tasks = {t["type"]: t["restartCount"] for t in out.status["tasks"]}
    assert tasks["client"] == 1
    again = read(KIND, {**stored(spec), "status": out.status}).view
    pods = _pods(server_0="Running", client_0="Running", client_1="Failed")
    out = plan(KIND, again, pods, NOW)
    assert out.finished is not None and out.finished.phase == "Failed"
    assert "reached, not restarting" in out.finished.message
