"""The manager: informers -> queues -> workers, under leader election.

It owns the process's long-lived parts and their order of life:

1. ``/healthz``, ``/readyz`` (health probe address) and ``/metrics`` (metrics
   address) start first, so probes answer while caches fill; then the
   controllers' own servers (``ControllerContext.servers``: the progress
   endpoint), on every replica (a standby's answers that it is not the leader).
2. Informers start and sync on every replica (a standby has a warm cache when
   it takes over); ``/readyz`` turns 200 once every informer has synced.
3. Controllers' workers start only while this process holds the Lease
   (``--leader-elect``), or at once without leader election.
4. Leadership lost: workers stop at once and the process exits non-zero, as
   controller-runtime does, so a fresh process rejoins the election with
   nothing half-remembered.
5. SIGTERM/SIGINT: stop intake, drain in-flight reconciles (bounded by
   ``graceful_shutdown_timeout``), release the Lease so a peer takes over at
   once, stop informers and servers, exit 0.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from t9k_operator.foundation import metrics, metrics_jobs
from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.kube import KubeClient
from t9k_operator.runtime.controller import Controller, ControllerContext, Server
from t9k_operator.runtime.events import EventRecorder
from t9k_operator.runtime.leaderelection import LeaderElectionOptions, LeaderElector
from t9k_operator.runtime.tls import parse_bind_address

log = structlog.get_logger(__name__)


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass
class ManagerOptions:
    namespace: str | None = None
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    leader_elect: bool = False
    leader_election: LeaderElectionOptions = field(default_factory=LeaderElectionOptions)
    concurrent_reconciles: int = 4
    graceful_shutdown_timeout: float = 30.0
    identity: str = field(default_factory=default_identity)


ControllerBuilder = Callable[[ControllerContext], list[Controller]]


class _Handler(BaseHTTPRequestHandler):
    routes: dict[str, Callable[[], tuple[int, str, bytes]]] = {}

    def do_GET(self) -> None:
        route = self.routes.get(self.path.split("?", 1)[0])
        if route is None:
            status, ctype, body = 404, "text/plain", b"not found\n"
        else:
            status, ctype, body = route()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _serve(
    address: tuple[str, int], routes: dict[str, Callable[[], tuple[int, str, bytes]]], name: str
) -> ThreadingHTTPServer:
    handler = type(f"{name}Handler", (_Handler,), {"routes": routes})
    server = ThreadingHTTPServer(address, handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=f"http-{name}", daemon=True).start()
    return server


class Manager:
    def __init__(
        self,
        client: KubeClient,
        options: ManagerOptions,
        build_controllers: ControllerBuilder | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        election_client: KubeClient | None = None,
        events_client: KubeClient | None = None,
    ) -> None:
        """``election_client`` and ``events_client``, when given, carry lease
        renewals and Events on limiters of their own, so neither waits behind
        reconciles nor spends their budget (as controller-runtime does)."""
        self.client = client
        self.election_client = election_client or client
        self.options = options
        self.clock = clock
        self.informers = InformerFactory(client, options.namespace)
        self._leading = threading.Event()
        self.extra_servers: list[Server] = []  # the controllers' own (the progress endpoint)
        self.recorder = EventRecorder(events_client or client, clock=clock, host=options.identity)
        self.controllers: list[Controller] = (
            build_controllers(
                ControllerContext(
                    client,
                    self.informers,
                    self.recorder,
                    options.concurrent_reconciles,
                    clock,
                    servers=self.extra_servers,
                    is_leader=self.is_leader,
                )
            )
            if build_controllers
            else []
        )
        self._stop = threading.Event()
        self._exit_code = 0
        self._controllers_started = False
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self._elector: LeaderElector | None = None
        self.metrics_port: int | None = None
        self.health_port: int | None = None

    # -- probes --------------------------------------------------------------------

    def _healthz(self) -> tuple[int, str, bytes]:
        return 200, "text/plain", b"ok\n"

    def _readyz(self) -> tuple[int, str, bytes]:
        if self._stop.is_set():
            return 503, "text/plain", b"shutting down\n"
        if not self.informers.has_synced():
            return 503, "text/plain", b"informers not synced\n"
        return 200, "text/plain", b"ok\n"

    def _metrics(self) -> tuple[int, str, bytes]:
        for controller in self.controllers:
            controller.queue.update_unfinished_work()
        return 200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)

    def _start_servers(self) -> None:
        health = parse_bind_address(self.options.health_probe_bind_address)
        if health:
            server = _serve(health, {"/healthz": self._healthz, "/readyz": self._readyz}, "health")
            self._servers.append(server)
            self.health_port = server.server_address[1]
        metrics_addr = parse_bind_address(self.options.metrics_bind_address)
        if metrics_addr:
            server = _serve(metrics_addr, {"/metrics": self._metrics}, "metrics")
            self._servers.append(server)
            self.metrics_port = server.server_address[1]
        for extra in self.extra_servers:
            extra.start()

    # -- leadership ----------------------------------------------------------------

    def _start_controllers(self) -> None:
        with self._lock:
            if self._controllers_started or self._stop.is_set():
                return
            self._controllers_started = True
        self.informers.wait_for_sync()
        # The sync may take long: leadership may have been lost, or a stop asked
        # for, meanwhile. Check again, under the lock _on_stopped_leading takes,
        # so controllers never start after they were told to stop.
        with self._lock:
            if self._stop.is_set() or (self.options.leader_elect and not self._leading.is_set()):
                log.info("not starting controllers: stopping or no longer leading")
                return
            for controller in self.controllers:
                controller.start()

    def _on_started_leading(self) -> None:
        self._leading.set()
        metrics.LEADER.labels(self.options.leader_election.lease_name).set(1)
        log.info("became leader", identity=self.options.identity)
        threading.Thread(
            target=self._start_controllers, name="start-controllers", daemon=True
        ).start()

    def _on_stopped_leading(self) -> None:
        was_leading = self._leading.is_set()
        self._leading.clear()
        metrics.LEADER.labels(self.options.leader_election.lease_name).set(0)
        with self._lock:
            for controller in self.controllers:
                controller.stop()
        if not self._stop.is_set():
            log.error(
                "leadership lost, exiting", identity=self.options.identity, was_leading=was_leading
            )
            self._exit_code = 1
            self._stop.set()

    def is_leader(self) -> bool:
        return self._leading.is_set()

    # -- run -----------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to shut down gracefully (signal handlers call this)."""
        self._stop.set()

    def run(self) -> int:
        """Run until :meth:`stop` or leadership loss; return the exit code."""
        opts = self.options
        log.info(
            "starting manager",
            identity=opts.identity,
            namespace=opts.namespace or "*",
            leader_elect=opts.leader_elect,
            controllers=[c.name for c in self.controllers],
        )
        # The jobs gauges come from the cache, from the leader only: a standby's
        # cache holds the same jobs, and summing over replicas must count each once.
        metrics_jobs.JOBS.export_while(lambda: self._leading.is_set() and not self._stop.is_set())
        self._start_servers()
        self.recorder.start()
        self.informers.start()
        elector_thread: threading.Thread | None = None
        if opts.leader_elect:
            # A standby says so (0), as controller-runtime's does, rather than
            # exporting nothing: "no line" cannot tell a standby from a scrape gap.
            metrics.LEADER.labels(opts.leader_election.lease_name).set(0)
            self._elector = LeaderElector(
                self.election_client,
                opts.leader_election,
                identity=opts.identity,
                clock=self.clock,
                on_started_leading=self._on_started_leading,
                on_stopped_leading=self._on_stopped_leading,
            )
            elector_thread = threading.Thread(
                target=self._elector.run, name="leader-election", daemon=True
            )
            elector_thread.start()
        else:
            self._leading.set()
            threading.Thread(
                target=self._start_controllers, name="start-controllers", daemon=True
            ).start()
        while not self._stop.wait(0.5):
            pass
        self._shutdown(elector_thread)
        return self._exit_code

    def _shutdown(self, elector_thread: threading.Thread | None) -> None:
        log.info("shutting down", identity=self.options.identity)
        timeout = self.options.graceful_shutdown_timeout
        for controller in self.controllers:
            if controller.running and not controller.stop(drain_timeout=timeout):
                log.warning(
                    "reconciles still running at shutdown timeout", controller=controller.name
                )
        if self._elector is not None:
            self._elector.stop()
            if elector_thread is not None:
                elector_thread.join(timeout=5)
        metrics_jobs.JOBS.export_while(None)
        self.informers.stop()
        self.recorder.stop(timeout=5)
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for extra in self.extra_servers:
            extra.stop()
        log.info("stopped", exit_code=self._exit_code)


def pod_namespace() -> str | None:
    """The namespace this process runs in, when it runs in a pod."""
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    if os.path.exists(path):
        with open(path) as f:
            return f.read().strip() or None
    return os.environ.get("POD_NAMESPACE") or None
