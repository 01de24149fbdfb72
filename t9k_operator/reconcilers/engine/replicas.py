"""The replica part of a job's status: ``tasks`` (per replica type: its
restarts and the replicas that have a pod or are being created), the
``aggregate`` counts, ``replicas``, ``readyReplicas`` and ``selector``, and
``nodes`` (the node each replica last ran on, which outlives its pod). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_operator.builders.common import job_selector
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import JobView, Role
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine.conditions import TERMINAL


def role_restarts(prev: Mapping[str, Any]) -> dict[str, int]:
    return {str(t.get("type")): int(t.get("restartCount") or 0) for t in prev.get("tasks") or []}


def render_replicas(
    job: JobView,
    pods: Mapping[tuple[str, int], ReplicaState],
    status: Obj,
    role_restarts: Mapping[str, int],
    creating: set[tuple[str, int]],
    deleting: set[str],
) -> None:
    """``tasks`` (per type: restarts, and the replicas that have a pod or are
    being created now) and ``aggregate`` counts of every wanted replica, into
    ``status``; ``creating`` and ``deleting`` are what this pass plans."""
    aggregate = {
        k: 0
        for k in ("creating", "deleted", "failed", "pending", "running", "succeeded", "unknown")
    }
    waiting = status.get("phase") not in (*TERMINAL, "Paused")
    tasks: list[Obj] = []
    ready = total = 0
    for role in job.roles:
        replicas, role_ready, role_total = _role_replicas(
            role, pods, creating, deleting, aggregate, waiting
        )
        ready += role_ready
        total += role_total
        tasks.append(
            {
                "type": role.type,
                "restartCount": role_restarts.get(role.type, 0),
                "replicas": replicas,
            }
        )
    status["tasks"] = tasks
    status["aggregate"] = aggregate
    status["replicas"] = total
    status["readyReplicas"] = ready
    status["selector"] = job_selector(job.kind, job.name)


def _role_replicas(
    role: Role,
    pods: Mapping[tuple[str, int], ReplicaState],
    creating: set[tuple[str, int]],
    deleting: set[str],
    aggregate: dict[str, int],
    waiting: bool,
) -> tuple[list[Obj], int, int]:
    """The replicas of ``role`` that have a pod or are being created, each
    counted in ``aggregate`` by its phase, and those without a pod as creating
    (``waiting``: the job goes on) or deleted; with how many of them are ready
    and how many count toward ``replicas``."""
    replicas: list[Obj] = []
    ready = total = 0
    listed = sorted(
        {i for t, i in pods if t == role.type and i < role.replicas}
        | {i for t, i in creating if t == role.type}
    )
    for index in listed:
        state = pods.get((role.type, index))
        if state is None:
            replicas.append({"name": "", "uid": "", "phase": "Creating", "containers": []})
            continue
        phase = _replica_phase(state, deleting)
        replicas.append(_replica_entry(state, phase))
        ready += state.phase == "Running" and not (state.terminating or state.lost)
        total += not state.terminating and state.uid not in deleting
        key = phase.lower() if phase.lower() in aggregate else "unknown"
        aggregate[key] += 1
    without_pod = role.replicas - sum(1 for i in listed if (role.type, i) in pods)
    aggregate["creating" if waiting else "deleted"] += without_pod
    return replicas, ready, total


def _replica_phase(state: ReplicaState, deleting: set[str]) -> str:
    """The phase a replica's pod shows: Deleted once it is being deleted (or
    this pass deletes it), Unknown while its node is lost, else the pod's."""
    phase = "Deleted" if state.terminating or state.uid in deleting else state.phase
    if phase in ("Pending", "Running") and state.lost:
        phase = "Unknown"
    return phase


def _replica_entry(state: ReplicaState, phase: str) -> Obj:
    """One replica of ``tasks[].replicas``: its pod, ``phase`` and containers,
    each without the fields it has no value for."""
    return {
        "name": state.name,
        "uid": state.uid,
        "phase": phase,
        "containers": [
            {
                k: v
                for k, v in (
                    ("name", n),
                    ("state", st),
                    ("exitCode", code),
                    ("reason", rsn),
                )
                if v not in (None, "")
            }
            for n, st, code, rsn in state.containers
        ],
    }


def render_nodes(
    prev: Mapping[str, Any], pods: Mapping[tuple[str, int], ReplicaState], status: Obj
) -> None:
    """``nodes``: the node each replica's pod is placed on now, else the one the
    last status recorded for it (its pod gone or not placed again yet), by the
    pod's name, sorted by replica type and index; absent while no replica has
    been placed."""
    nodes = {
        str(n["replica"]): str(n["node"])
        for n in prev.get("nodes") or []
        if n.get("replica") and n.get("node")
    }
    nodes |= {s.name: s.node for s in pods.values() if s.node}
    if nodes:
        status["nodes"] = [
            {"replica": r, "node": nodes[r]} for r in sorted(nodes, key=_replica_order)
        ]


def _replica_order(pod_name: str) -> tuple[str, int]:
    """``j-worker-2`` before ``j-worker-10``: by type, then by index."""
    head, _, index = pod_name.rpartition("-")
    return (head, int(index)) if index.isdigit() else (pod_name, -1)
