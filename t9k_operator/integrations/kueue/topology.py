"""Topology-aware placement by Kueue (its TAS): a replica type's pods kept
within one rack, one block, or another level of the cluster's network.

A replica template asks it with Kueue's own annotations, as for Kueue's
job integrations: ``kueue.x-k8s.io/podset-required-topology: <node label>``
(all the type's pods in one domain of that level, or the job waits),
``-preferred-topology`` (as close as it can), ``-unconstrained-topology:
"true"`` (anywhere on the topology's nodes), and the slice pair
``-slice-required-topology`` with ``-slice-size`` (each group of that many
pods in one domain). The annotations' rules are checked at admission
(``t9k_operator/api/template.py``).

The operator states the request on the type's pod set of the Workload, with
the replica index label as the pods' rank, so that neighbouring ranks land
next to each other. Once Kueue admits the Workload with a topology
assignment, each pod of that pod set is created behind Kueue's scheduling
gate ``kueue.x-k8s.io/topology``, with the label naming its pod set and the
annotation naming its Workload: Kueue's topology ungater finds the pods by
these, writes each pod's domain into its node selector and takes the gate off.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_operator.api.topology import (
    GROUP_NAME,
    PREFERRED,
    PREFIX,
    REQUIRED,
    SLICE_REQUIRED,
    SLICE_SIZE,
    TRUE,
    UNCONSTRAINED,
)
from t9k_operator.builders.common import REPLICA_INDEX
from t9k_operator.objects import Obj

GATE = PREFIX + "topology"
"""Kueue's scheduling gate of a pod waiting for its topology domain."""
POD_SET_LABEL = PREFIX + "podset"
WORKLOAD_ANNOTATION = PREFIX + "workload"


def request(annotations: Mapping[str, Any]) -> Obj | None:
    """A pod set's ``topologyRequest`` from its template's annotations (checked
    at admission); None when they ask for no placement."""
    out: Obj = {}
    if REQUIRED in annotations:
        out["required"] = str(annotations[REQUIRED])
    elif PREFERRED in annotations:
        out["preferred"] = str(annotations[PREFERRED])
    elif UNCONSTRAINED in annotations:
        out["unconstrained"] = str(annotations[UNCONSTRAINED]) in TRUE
    if SLICE_REQUIRED in annotations and SLICE_SIZE in annotations:
        out["podSetSliceRequiredTopology"] = str(annotations[SLICE_REQUIRED])
        out["podSetSliceSize"] = int(annotations[SLICE_SIZE])
    if not out:
        return None
    if GROUP_NAME in annotations and ("required" in out or "preferred" in out):
        out["podSetGroupName"] = str(annotations[GROUP_NAME])
    out["podIndexLabel"] = REPLICA_INDEX
    return out


def assigned(workload: Obj) -> frozenset[str]:
    """The pod sets of an admitted Workload that Kueue placed by topology."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return frozenset(
        str(a.get("name"))
        for a in admission.get("podSetAssignments") or []
        if a.get("topologyAssignment")
    )


def await_domain(pod: Obj, pod_set: str, workload: str) -> Obj:
    """``pod`` behind Kueue's topology gate, with what its ungater finds it by."""
    meta = pod["metadata"]
    meta.setdefault("labels", {})[POD_SET_LABEL] = pod_set
    meta.setdefault("annotations", {})[WORKLOAD_ANNOTATION] = workload
    gates = pod["spec"].setdefault("schedulingGates", [])
    if {"name": GATE} not in gates:
        gates.append({"name": GATE})
    return pod


def unqueued(asked_by: str) -> str:
    """What a job that asks for placement by ``asked_by`` but names no queue is told."""
    return (
        f"{asked_by}: stored as written, but the job names no Kueue queue, so Kueue does "
        "not place its pods by topology: the job runs as if it were not set"
    )
