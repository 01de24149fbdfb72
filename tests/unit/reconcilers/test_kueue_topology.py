"""Kueue's topology-aware placement in the apply path, for every kind: a
replica template's topology annotation becomes its pod set's topology request;
admitted with a topology assignment, each pod waits behind Kueue's topology
gate, carrying the pod set label and Workload annotation Kueue's ungater finds
it by; a broken annotation fails the job naming it. Kueue's side is played by
writing the Workload's status the way Kueue v0.17 writes it (a
``topologyAssignment`` per pod set; tests/integration/test_kueue_topology.py
meets the real one)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from t9k_operator.api.topology import topology_error
from tests.unit.reconcilers.test_job_reconciler import JOBS, KINDS, Harness
from tests.unit.reconcilers.test_kueue_reconciler import (
    ADMITTED,
    KUEUE,
    POD_SETS,
    WORKLOAD,
    kueue_sets,
    queued,
    workload,
)

RACK = "cloud.example/rack"


def templates(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod template of a job (a map under a key ``template`` with a ``spec``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template" and isinstance(value, dict) and "spec" in value:
                yield value
            else:
                yield from templates(value)
    elif isinstance(node, list):
        for value in node:
            yield from templates(value)


def annotated(kind: str, annotations: dict[str, str]) -> dict[str, Any]:
    """The kind's queued job, each of its templates carrying ``annotations``."""
    job = queued(kind)
    found = list(templates(job["spec"]))
    assert found, f"{kind}: no pod template found"
    for template in found:
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
    return job


def placed_by_topology(pod_sets: dict[str, int]) -> dict[str, Any]:
    """ADMITTED, each pod set given one rack (Kueue v0.17's assignment shape)."""
    status = copy.deepcopy(ADMITTED)
    status["admission"]["podSetAssignments"] = [
        {
            "name": name,
            "count": count,
            "flavors": {"nvidia.com/gpu": "tas"},
            "topologyAssignment": {
                "levels": [RACK],
                "slices": [
                    {
                        "domainCount": 1,
                        "podCounts": {"universal": count},
                        "valuesPerLevel": [{"universal": "rack-a"}],
                    }
                ],
            },
        }
        for name, count in pod_sets.items()
    ]
    return status


@pytest.mark.parametrize("kind", KINDS)
def test_a_required_rack_is_the_pod_sets_request_and_the_pods_wait_for_their_domain(
    kind: str,
) -> None:
    h = Harness(
        kind, annotated(kind, {"kueue.x-k8s.io/podset-required-topology": RACK}), kueue=KUEUE
    )
    h.run()
    pod_sets = workload(h)["spec"]["podSets"]
    assert {ps["name"]: ps["count"] for ps in pod_sets} == POD_SETS[kind]
    for ps in pod_sets:
        assert ps["topologyRequest"] == {"required": RACK, "podIndexLabel": "t9k.dev/replica-index"}
    assert h.pod_names() == []
    kueue_sets(h, placed_by_topology(POD_SETS[kind]))
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    for (k, _, _), pod in h.fake.objects.items():
        if k != "Pod":
            continue
        assert {"name": "kueue.x-k8s.io/topology"} in pod["spec"]["schedulingGates"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] in POD_SETS[kind]
        assert pod["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == WORKLOAD


def test_preferred_unconstrained_and_slices_are_requested_as_written() -> None:
    cases = [
        ({"kueue.x-k8s.io/podset-preferred-topology": RACK}, {"preferred": RACK}),
        ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, {"unconstrained": True}),
        ({"kueue.x-k8s.io/podset-unconstrained-topology": "F"}, {"unconstrained": False}),
        (
            {
                "kueue.x-k8s.io/podset-required-topology": "cloud.example/block",
                "kueue.x-k8s.io/podset-slice-required-topology": RACK,
                "kueue.x-k8s.io/podset-slice-size": "2",
            },
            {
                "required": "cloud.example/block",
                "podSetSliceRequiredTopology": RACK,
                "podSetSliceSize": 2,
            },
        ),
        (
            {
                "kueue.x-k8s.io/podset-preferred-topology": RACK,
                "kueue.x-k8s.io/podset-group-name": "together",
            },
            {"preferred": RACK, "podSetGroupName": "together"},
        ),
    ]
    for notes, request in cases:
        h = Harness("PyTorchTrainingJob", annotated("PyTorchTrainingJob", notes), kueue=KUEUE)
        h.run()
        (ps,) = workload(h)["spec"]["podSets"]
        assert ps["topologyRequest"] == {**request, "podIndexLabel": "t9k.dev/replica-index"}


def test_without_topology_annotations_or_assignment_nothing_of_it_is_added() -> None:
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob"), kueue=KUEUE)
    h.run()
    (ps,) = workload(h)["spec"]["podSets"]
    assert "topologyRequest" not in ps
    kueue_sets(h, ADMITTED)  # admitted by a flavor without a topology
    h.run()
    pods = [pod for (k, _, _), pod in h.fake.objects.items() if k == "Pod"]
    assert pods
    for pod in pods:
        assert "schedulingGates" not in pod["spec"]
        assert "kueue.x-k8s.io/podset" not in pod["metadata"].get("labels", {})


@pytest.mark.parametrize(
    ("annotations", "named", "says"),
    [
        (
            {
                "kueue.x-k8s.io/podset-required-topology": RACK,
                "kueue.x-k8s.io/podset-preferred-topology": RACK,
            },
            "kueue.x-k8s.io/podset-preferred-topology",
            "at most one of the three",
        ),
        (
            {"kueue.x-k8s.io/podset-required-topology": "rack with spaces"},
            "kueue.x-k8s.io/podset-required-topology",
            "node label's name",
        ),
        (
            {"kueue.x-k8s.io/podset-unconstrained-topology": "yes"},
            "kueue.x-k8s.io/podset-unconstrained-topology",
            '"true" or "false"',
        ),
        (
            {"kueue.x-k8s.io/podset-slice-required-topology": RACK},
            "kueue.x-k8s.io/podset-slice-required-topology",
            "set together with kueue.x-k8s.io/podset-slice-size",
        ),
        (
            {
                "kueue.x-k8s.io/podset-slice-required-topology": RACK,
                "kueue.x-k8s.io/podset-slice-size": "0",
            },
            "kueue.x-k8s.io/podset-slice-size",
            "at least 1",
        ),
        (
            {"kueue.x-k8s.io/podset-group-name": "g"},
            "kueue.x-k8s.io/podset-group-name",
            "only with",
        ),
        (
            {
                "kueue.x-k8s.io/podset-required-topology": RACK,
                "kueue.x-k8s.io/podset-group-name": "12",
            },
            "kueue.x-k8s.io/podset-group-name",
            "not be a number",
        ),
    ],
)
def test_a_broken_topology_annotation_is_named(
    annotations: dict[str, str], named: str, says: str
) -> None:
    broken = topology_error(annotations)
    assert broken is not None
    assert broken[0] == named and says in broken[1]


def test_a_job_with_a_broken_annotation_fails_naming_it_and_gets_no_workload() -> None:
    bad = {"kueue.x-k8s.io/podset-unconstrained-topology": "maybe"}
    h = Harness("PyTorchTrainingJob", annotated("PyTorchTrainingJob", bad), kueue=KUEUE)
    h.run()
    status = h.job()["status"]
    assert status["phase"] == "Failed"
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == (
        "invalid spec: spec.replicaSpecs[0].template: metadata.annotations"
        '[kueue.x-k8s.io/podset-unconstrained-topology] must be "true" or "false"'
    )
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == []


def test_good_annotations_and_other_annotations_pass() -> None:
    assert topology_error({}) is None
    assert topology_error({"example.com/note": "anything"}) is None
    assert (
        topology_error({"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"})
        is None
    )


REQUIRED_RACK = {"kueue.x-k8s.io/podset-required-topology": RACK}


def not_acted_on(h: Harness) -> list[str]:
    return [e.message for e in h.recorder.events if e.reason == "FieldNotActedOn"]


def test_without_kueue_the_annotation_is_named_as_not_acted_on() -> None:
    job = annotated("PyTorchTrainingJob", REQUIRED_RACK)
    h = Harness("PyTorchTrainingJob", job, integrations=())
    h.run()
    (said,) = not_acted_on(h)
    # The queue it names is not acted on either (nothing here queues).
    assert said.startswith(
        "spec.scheduler.t9kScheduler, spec.replicaSpecs[0].template.metadata.annotations"
        "[kueue.x-k8s.io/podset-required-topology]: stored as written, but no part of this "
        "operator that is on acts on it"
    ), said


def test_with_kueue_a_job_naming_no_queue_is_told_kueue_does_not_place_it() -> None:
    job = annotated("MSJob", REQUIRED_RACK)
    del job["spec"]["runPolicy"]  # names no queue
    h = Harness("MSJob", job, kueue=KUEUE)
    h.run()
    (said,) = not_acted_on(h)
    assert said == (
        "spec.msReplicaSpecs[Scheduler].template.metadata.annotations"
        "[kueue.x-k8s.io/podset-required-topology]: stored as written, but the job names no "
        "Kueue queue, so Kueue does not place its pods by topology: the job runs as if it "
        "were not set"
    )
    assert h.fake.of_kind("Workload") == []


def test_with_kueue_and_a_queue_nothing_is_said() -> None:
    h = Harness("PyTorchTrainingJob", annotated("PyTorchTrainingJob", REQUIRED_RACK), kueue=KUEUE)
    h.run()
    assert not_acted_on(h) == []
