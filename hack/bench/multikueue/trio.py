"""The bench's three clusters: the MultiKueue trio ``hack.cluster
multikueue`` makes, what the jobs need in each (CRDs, the namespace, the
priority class, the queues with quota for every job), an operator with
``--kueue`` on each, and their end: every cluster down, also on failure."""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.cluster import Cluster, state_dir
from hack.cluster.handle import ROOT
from hack.cluster.multikueue import CHECK, WORKERS, worker_name
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.integrations.kueue import build as kueue
from t9k_operator.integrations.kueue.integration import WORKLOAD_PRIORITY_CLASSES
from t9k_operator.kube import AlreadyExists, KubeClient
from t9k_operator.resources import Resource

from ..common.cluster import bench_client, bench_cluster, install_crds, wait_until
from ..common.jobs import NAMESPACE
from ..common.log import log
from ..common.operator import Operator
from ..job_start.integrations import CLUSTER_QUEUE, LOCAL_QUEUE, PRIORITY
from ..job_start.prepare import CLUSTER_QUEUES, active, kueue_queues, manifest_object

MK_CLUSTERS = Resource(
    kueue.GROUP, kueue.VERSION, "multikueueclusters", "MultiKueueCluster", namespaced=False
)
MANAGER = "manager"
# The operators side by side on one machine: no progress endpoint (its port
# would be the same for all three).
OPERATOR_FLAGS = ("--kueue", "--progress-bind-address", "0")


@dataclass
class Member:
    """One cluster of the trio, the bench's client of it and its operator."""

    role: str  # manager | worker-1 | worker-2
    cluster: Cluster
    client: KubeClient | None = None
    operator: Operator | None = None

    @property
    def kueue_log(self) -> Path:
        return state_dir(self.cluster.name) / "kueue-manager.log"


@dataclass
class Trio:
    """The manager ``name`` and its two workers."""

    name: str
    logs: Path
    members: dict[str, Member] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.members[MANAGER] = Member(MANAGER, bench_cluster(self.name))
        for w in WORKERS:
            self.members[w] = Member(w, bench_cluster(worker_name(self.name, w)))

    @property
    def manager(self) -> Member:
        return self.members[MANAGER]

    @property
    def workers(self) -> list[Member]:
        return [self.members[w] for w in WORKERS]

    def start(self, jobs: int) -> None:
        """The trio started anew, connected, with quota for ``jobs`` on every
        cluster and the queues Active."""
        for m in self.members.values():
            m.cluster.down()  # a fresh start: a worker left running would be reused
        self.manager.cluster.up()
        self.manager.cluster.command("multikueue")
        for m in self.members.values():
            m.cluster.up()  # running already: reads its state
            m.client = bench_client(m.cluster)
            install_crds(m.cluster, m.client, ROOT)
        self._wait_connected()
        for m in self.members.values():
            self._queues(m, jobs)

    def _wait_connected(self) -> None:
        client = self.manager.client
        assert client is not None

        def connected() -> bool:
            return all(active(client.get(MK_CLUSTERS, w)) for w in WORKERS)

        wait_until("both MultiKueueClusters Active", connected, 120)

    def _queues(self, m: Member, jobs: int) -> None:
        """The WorkloadPriorityClass the jobs name, the flavor, the ClusterQueue
        (the manager's naming the check ``multikueue``) with CPU quota for all
        ``jobs`` at once, the LocalQueue; both queues Active."""
        client = m.client
        assert client is not None
        wpcs = ROOT / "manifests" / "kueue" / "workload-priority-classes.yaml"
        with contextlib.suppress(AlreadyExists):
            body = manifest_object(wpcs, priority_class(PRIORITY))
            client.create(WORKLOAD_PRIORITY_CLASSES, body)
        for resource, body in kueue_queues(jobs):
            if m.role == MANAGER and resource == CLUSTER_QUEUES:
                body["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": CHECK}]}
            client.create(resource, body, NAMESPACE if resource.namespaced else None)
        wait_until(
            f"{m.role}'s ClusterQueue Active",
            lambda: active(client.get(CLUSTER_QUEUES, CLUSTER_QUEUE)),
            120,
        )
        log(f"{m.role}: queues {CLUSTER_QUEUE} / {LOCAL_QUEUE} Active, quota for {jobs} jobs")

    def start_operators(self, *flags: str) -> None:
        """This tree's operator on each cluster with ``--kueue`` and ``flags``."""
        for m in self.members.values():
            log_path = self.logs / f"operator-{m.role}.log"
            m.operator = Operator(ROOT, m.cluster.kubeconfig, log_path, *OPERATOR_FLAGS, *flags)
        for m in self.members.values():
            assert m.operator is not None
            m.operator.wait_ready()

    def kueue_config(self) -> dict[str, Any]:
        """The manager's Kueue configuration's ``multiKueue`` part and its
        ``clientConnection`` (hack/cluster's, as it started)."""
        path = state_dir(self.name) / "kueue" / "config.yaml"
        try:
            config = json.loads(path.read_text())  # JSON, as hack/cluster writes it
        except (OSError, ValueError):
            return {}
        return {**config.get("multiKueue", {}), "clientConnection": config.get("clientConnection")}

    def stop(self) -> list[str]:
        """Operators stopped, Kueue's logs kept in :attr:`logs`, every cluster
        down; the clusters of the trio still in the state folder after."""
        for m in self.members.values():
            if m.operator is not None:
                with contextlib.suppress(Exception):
                    m.operator.stop()
            if m.client is not None:
                with contextlib.suppress(Exception):
                    m.client.close()
            with contextlib.suppress(OSError):
                shutil.copyfile(m.kueue_log, self.logs / f"kueue-{m.role}.log")
        for m in self.members.values():
            m.cluster.stop()
        return [m.cluster.name for m in self.members.values() if state_dir(m.cluster.name).exists()]


def kueue_log_lines(m: Member) -> list[str]:
    """The lines of the Kueue manager's log of ``m`` (none when it has none)."""
    try:
        return m.kueue_log.read_text(errors="replace").splitlines()
    except OSError:
        return []


def server_hosts(trio: Trio) -> dict[str, str]:
    """Each cluster's API server ``host:port`` -> its role."""
    return {m.cluster.server.partition("://")[2]: m.role for m in trio.members.values()}


def client_of(m: Member) -> KubeClient:
    assert m.client is not None
    return m.client
