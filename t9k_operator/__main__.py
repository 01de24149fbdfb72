"""Command line: flags -> :class:`~t9k_operator.manager.Manager`.

``t9k-operator`` (console script) and ``python -m t9k_operator`` both land
here. Flag names follow controller-runtime's.
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import structlog

from t9k_operator import __version__
from t9k_operator import registry as integrations
from t9k_operator.kube import ApiError, ClientOptions, Forbidden, KubeClient
from t9k_operator.kube.discovery import not_served
from t9k_operator.manager import Manager, ManagerOptions, pod_namespace
from t9k_operator.reconcilers.controllers import CONTROLLERS, build_controllers
from t9k_operator.reconcilers.engine import DEFAULT_DISRUPTION_LIMIT, DEFAULT_START_TIMEOUT
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL
from t9k_operator.reconcilers.pipeline.contract import Integration
from t9k_operator.resources import NODES
from t9k_operator.runtime import logging as oplogging
from t9k_operator.runtime.leaderelection import LeaderElectionOptions

DEFAULT_QPS, DEFAULT_BURST = 50.0, 100
"""The reconcile client's limit against an API server without API Priority and
Fairness: why these values, at the flags below."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags, checked: a value out of range exits with the usage and why."""
    p = argparse.ArgumentParser(
        prog="t9k-operator",
        description="Runs PyTorchTrainingJob, DeepSpeedJob, ColossalAIJob and MSJob.",
    )
    _add_cluster_flags(p)
    _add_leader_election_flags(p)
    _add_throughput_flags(p)
    _add_lifecycle_flags(p)
    integrations.add_flags(p)
    p.add_argument("--log-level", default="info", choices=oplogging.LEVELS)
    p.add_argument("--version", action="version", version=f"t9k-operator {__version__}")
    args = p.parse_args(argv)
    _check_args(p, args)
    return args


def _add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """Which cluster and namespace the operator watches, and where it serves
    its metrics and probes."""
    p.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)",
    )
    p.add_argument(
        "--namespace", default=None, help="watch only this namespace (default: all namespaces)"
    )
    p.add_argument(
        "--metrics-bind-address",
        default=":8080",
        help="address of /metrics, host:port or 0 to disable (default :8080)",
    )
    p.add_argument(
        "--health-probe-bind-address",
        default=":8081",
        help="address of /healthz and /readyz, or 0 to disable (default :8081)",
    )


def _add_leader_election_flags(p: argparse.ArgumentParser) -> None:
    """Whether the operator takes part in leader election, the Lease it holds
    and the timing of its renewals."""
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="take part in leader election; only the leader reconciles",
    )
    p.add_argument(
        "--leader-election-namespace",
        default=None,
        help="namespace of the leader Lease (default: the pod's, else t9k-system)",
    )
    p.add_argument(
        "--leader-election-id", default="t9k-operator-leader", help="name of the leader Lease"
    )
    p.add_argument(
        "--leader-elect-lease-duration",
        type=float,
        default=15.0,
        help="seconds a standby waits after the last renewal before taking over",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        type=float,
        default=10.0,
        help="seconds the leader keeps trying to renew before it gives up",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        type=float,
        default=2.0,
        help="seconds between leader election attempts",
    )


def _add_throughput_flags(p: argparse.ArgumentParser) -> None:
    """How much work the operator does at once: its workers per job kind and
    its limit on requests to the API server."""
    p.add_argument(
        "--concurrent-reconciles",
        type=int,
        default=4,
        help="worker threads per job kind (default 4)",
    )
    # API Priority and Fairness (on by default since Kubernetes 1.20, GA in 1.29)
    # queues and sheds each client's requests on the server, which answers the
    # excess with 429 and Retry-After: with it, a client-side limit only makes
    # jobs wait while the server is idle, so by default there is none (nor in
    # controller-runtime's clients). A server without it keeps the client-side
    # limit DEFAULT_QPS/DEFAULT_BURST (kube-scheduler's and Kueue's).
    p.add_argument(
        "--kube-api-qps",
        type=float,
        default=None,
        help=(
            "client-side limit on API requests per second; -1: none (default: none when "
            "the API server runs API Priority and Fairness, which then paces the operator "
            f"with 429s it retries; else {DEFAULT_QPS:g})"
        ),
    )
    p.add_argument(
        "--kube-api-burst",
        type=int,
        default=None,
        help=f"client-side burst above --kube-api-qps (default {DEFAULT_BURST} when limited)",
    )


def _add_lifecycle_flags(p: argparse.ArgumentParser) -> None:
    """How long running reconciles get to finish on shutdown, and when a job
    fails for its pods: one slow to start, or too many disruptions."""
    p.add_argument(
        "--graceful-shutdown-timeout",
        type=float,
        default=30.0,
        help="seconds to let running reconciles finish on SIGTERM (default 30)",
    )
    p.add_argument(
        "--pod-start-timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT,
        help=(
            "seconds a job's pod, once placed on a node, may take to start before the job "
            f"fails (default {DEFAULT_START_TIMEOUT:g}; 0: no limit; a job may set its own "
            "with the annotation t9k.dev/pod-start-timeout-seconds)"
        ),
    )
    p.add_argument(
        "--disruption-limit",
        type=int,
        default=DEFAULT_DISRUPTION_LIMIT,
        help=(
            "disruptions (evictions, preemptions, lost nodes) a job's replicas may suffer, "
            "each recreated without counting against backoffLimit, before the job fails "
            f"(default {DEFAULT_DISRUPTION_LIMIT}; 0: no limit)"
        ),
    )


def _check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit through the parser with the first flag out of range, the
    integrations' own checks last."""
    if args.concurrent_reconciles < 1:
        p.error("--concurrent-reconciles must be at least 1")
    if not (
        0
        < args.leader_elect_retry_period
        < args.leader_elect_renew_deadline
        < args.leader_elect_lease_duration
    ):
        p.error("leader election needs retry-period < renew-deadline < lease-duration")
    if args.pod_start_timeout < 0:
        p.error("--pod-start-timeout must be 0 (no limit) or more")
    if args.disruption_limit < 0:
        p.error("--disruption-limit must be 0 (no limit) or more")
    if args.kube_api_qps is not None and args.kube_api_qps <= 0 and args.kube_api_qps != -1:
        p.error("--kube-api-qps must be > 0, or -1 for no limit")
    if args.kube_api_burst is not None and args.kube_api_burst < 1:
        p.error("--kube-api-burst must be >= 1")
    problem = integrations.check_flags(args)
    if problem:
        p.error(problem)


def unserved(client: KubeClient, enabled: Sequence[Integration[Any]]) -> str | None:
    """Why an enabled integration cannot be used (an API it needs is not served)."""
    for integration in enabled:
        for need in integration.needs:
            missing = not_served(client, need.resource)
            if missing is not None:
                return need.unserved(missing)
    return None


def may_watch_nodes(client: KubeClient, log: Any) -> bool:
    """Whether the operator may list and watch Nodes, which tell it that a
    replica's node is lost. A namespaced install has no ClusterRole: its jobs
    then learn of a lost node only from a pod whose phase is Unknown, or once
    Kubernetes evicts the pod."""
    try:
        client.list(NODES, limit=1)
    except Forbidden:
        # Expected of a namespaced install: said once, not as a refusal.
        log.info(
            "nodes not watched (no grant to list them): a job learns that a replica's "
            "node is lost only from its pods; grant list and watch on nodes to see it at once"
        )
        return False
    except ApiError as exc:  # the API server in trouble: the informers retry
        log.warning("cannot list nodes yet; watching them anyway", error=str(exc))
    return True


def reconcile_client_options(args: argparse.Namespace, pool_size: int) -> ClientOptions:
    """The reconcile client's limit: the flags when set (``-1``: none), else
    DEFAULT_QPS/DEFAULT_BURST until the API server shows it paces clients."""
    explicit = args.kube_api_qps is not None or args.kube_api_burst is not None
    return ClientOptions(
        qps=DEFAULT_QPS if args.kube_api_qps is None else args.kube_api_qps,
        burst=DEFAULT_BURST if args.kube_api_burst is None else args.kube_api_burst,
        lift_limit_under_apf=not explicit,
        pool_size=pool_size,
    )


def leader_election_options(args: argparse.Namespace) -> LeaderElectionOptions:
    return LeaderElectionOptions(
        namespace=args.leader_election_namespace or pod_namespace() or "t9k-system",
        lease_name=args.leader_election_id,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


# A renewal is a GET and an UPDATE every retry period (2 s by default).
LEADER_ELECTION_QPS, LEADER_ELECTION_BURST = 5.0, 10
# Events are aggregated by the recorder; this bounds what reaches the API server.
EVENTS_QPS, EVENTS_BURST = 20.0, 50


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    oplogging.configure(args.log_level)
    log = structlog.get_logger("t9k_operator")
    try:
        client = KubeClient.from_config(
            args.kubeconfig, options=reconcile_client_options(args, _pool_size(args))
        )
    except ApiError as exc:
        log.error("cannot configure the API client", error=str(exc))
        return 2
    # Lease renewals and Events on clients of their own (same connection, own
    # limiters, kept whatever the API server is): a burst of reconciles never
    # delays a renewal (and so never costs the leadership), and Events never
    # spend the reconcile budget.
    election_client, events_client = _election_client(client), _events_client(client)
    options = _manager_options(args)
    enabled = integrations.configure(args)
    problem = unserved(client, enabled)
    if problem:
        log.error("cannot use an integration", error=problem)
        return 2
    manager = Manager(
        client,
        options,
        functools.partial(
            build_controllers,
            integrations=enabled,
            pod_start_timeout=args.pod_start_timeout,
            disruption_limit=args.disruption_limit,
            watch_nodes=may_watch_nodes(client, log),
            # In a pod, its own; out of the cluster, the one it watches, if just one.
            namespace=pod_namespace() or args.namespace,
        ),
        election_client=election_client,
        events_client=events_client,
    )
    _stop_on_signals(manager, log)
    return manager.run()


def _pool_size(args: argparse.Namespace) -> int:
    """Connections the reconcile client keeps: one per worker of every
    controller, per pod create a controller may have in flight, and per watch,
    plus a few for events and leader election (a request beyond the pool opens
    a connection it then throws away: a TLS handshake each time)."""
    workers: int = args.concurrent_reconciles
    return CONTROLLERS * (workers + CREATE_PARALLEL) + 16


def _election_client(client: KubeClient) -> KubeClient:
    """The client that renews the leader Lease, on the reconcile client's
    connection with a limiter of its own."""
    return KubeClient(
        client.connection,
        ClientOptions(
            qps=LEADER_ELECTION_QPS,
            burst=LEADER_ELECTION_BURST,
            # A refused renewal is tried again by the elector within its renew
            # deadline, never later by the client behind its back.
            max_retries=0,
            pool_size=2,
            user_agent="t9k-operator/leader-election",
        ),
    )


def _events_client(client: KubeClient) -> KubeClient:
    """The client that records Events, on the reconcile client's connection
    with a limiter of its own."""
    return KubeClient(
        client.connection,
        ClientOptions(
            qps=EVENTS_QPS, burst=EVENTS_BURST, pool_size=4, user_agent="t9k-operator/events"
        ),
    )


def _manager_options(args: argparse.Namespace) -> ManagerOptions:
    """The manager's options from the flags."""
    return ManagerOptions(
        namespace=args.namespace,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_elect=args.leader_elect,
        leader_election=leader_election_options(args),
        concurrent_reconciles=args.concurrent_reconciles,
        graceful_shutdown_timeout=args.graceful_shutdown_timeout,
    )


def _stop_on_signals(manager: Manager, log: Any) -> None:
    """Stop the manager on SIGTERM and SIGINT."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received, shutting down", signal=signal.Signals(signum).name)
        manager.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


if __name__ == "__main__":
    sys.exit(main())
