"""A controller: one rate-limited work queue drained by N worker threads.

Informer event handlers only *enqueue keys* (``namespace/name`` of the object
to reconcile); workers take a key, call the reconcile function, and act on its
outcome exactly like controller-runtime:

* returns ``Result()``            -> ``forget`` (reset the key's backoff)
* returns ``Result(requeue_after=T)`` -> ``forget`` and ``add_after(T)``
* returns ``Result(requeue=True)`` -> ``add_rate_limited``
* raises                          -> ``add_rate_limited`` (a 409 Conflict is
  expected traffic and logged quietly; anything else is an error)

The queue guarantees one key is never reconciled by two workers at once.
Reconcile figures go to controller-runtime's metric names. This module knows
nothing about job kinds; the reconcilers hand it a function.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from t9k_operator.foundation import metrics
from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.kube import KubeClient
from t9k_operator.kube.errors import Conflict
from t9k_operator.objects import Obj, controller_ref, make_key
from t9k_operator.runtime.events import EventRecorder
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Result:
    requeue: bool = False
    requeue_after: float | None = None


ReconcileFunc = Callable[[str], Result]

OUTCOMES = ("success", "error", "requeue", "requeue_after")
"""The ``result`` label of ``controller_runtime_reconcile_total``."""


class Server(Protocol):
    """A server the manager starts and stops. :meth:`start` returns once it
    serves (or has said why it does not), so what follows at the
    manager's start may rely on it; what it returns is not read."""

    def start(self) -> object: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class ControllerContext:
    """What a reconciler module gets to build its controller from."""

    client: KubeClient
    informers: InformerFactory
    recorder: EventRecorder
    workers: int
    clock: Clock = REAL_CLOCK
    servers: list[Server] = field(default_factory=list)
    """Servers of the controllers' own, which the manager starts with its own
    and stops at shutdown (they serve on every replica, leading or not)."""
    is_leader: Callable[[], bool] = lambda: True
    """Whether this replica leads (its controllers' workers run)."""


class Controller:
    def __init__(
        self,
        name: str,
        reconcile: ReconcileFunc,
        *,
        workers: int = 1,
        clock: Clock = REAL_CLOCK,
        queue: RateLimitingQueue[str] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._clock = clock
        self.queue: RateLimitingQueue[str] = (
            queue if queue is not None else RateLimitingQueue(name, clock=clock)
        )
        self._threads: list[threading.Thread] = []
        self._active = threading.Event()
        self._log = log.bind(controller=name)

    # -- intake --------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Start the workers (call once, when this process may reconcile)."""
        self._active.set()
        metrics.MAX_CONCURRENT_RECONCILES.labels(self.name).set(self._workers)
        metrics.ACTIVE_WORKERS.labels(self.name).set(0)
        # Every series at 0 from the start (as controller-runtime does), so the
        # first error is an increase that rate() and increase() can see.
        metrics.RECONCILE_ERRORS.labels(self.name)
        for outcome in OUTCOMES:
            metrics.RECONCILE_TOTAL.labels(self.name, outcome)
        for i in range(self._workers):
            thread = threading.Thread(
                target=self._worker, name=f"{self.name}-worker-{i}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self._log.info("controller started", workers=self._workers)

    def stop(self, drain_timeout: float | None = None) -> bool:
        """Stop intake; with ``drain_timeout`` let in-flight reconciles finish first.

        ``drain_timeout=None`` stops at once: workers finish the reconcile they
        are in (Python threads cannot be killed) but start no other. Returns
        False when the drain timed out.
        """
        drained = True
        if drain_timeout is None:
            self._active.clear()
            self.queue.shut_down()
        else:
            drained = self.queue.shut_down_with_drain(drain_timeout)
            self._active.clear()
        for thread in self._threads:
            thread.join(drain_timeout if drain_timeout is not None else 0.1)
        self._log.info("controller stopped", drained=drained)
        return drained

    @property
    def running(self) -> bool:
        return self._active.is_set()

    # -- workers -------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown or key is None:
                return
            try:
                if self._active.is_set():
                    self.process(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key and requeue per the outcome (the worker's body).

        Every log line written during the reconcile, by this module or the
        reconcile function, carries ``controller``, ``key`` and a fresh
        ``reconcile_id`` (structlog context variables of this thread), as
        controller-runtime's carry ``reconcileID``."""
        reconcile_id = uuid.uuid4().hex[:12]
        with structlog.contextvars.bound_contextvars(
            controller=self.name, key=key, reconcile_id=reconcile_id
        ):
            self._process(key)

    def _process(self, key: str) -> None:
        started = self._clock.monotonic()
        metrics.ACTIVE_WORKERS.labels(self.name).inc()
        outcome = "success"
        try:
            result = self._reconcile(key)
        except Conflict as exc:
            outcome = "error"
            metrics.RECONCILE_ERRORS.labels(self.name).inc()
            log.info("conflict, retrying", error=str(exc))
            self.queue.add_rate_limited(key)
        except Exception as exc:
            outcome = "error"
            metrics.RECONCILE_ERRORS.labels(self.name).inc()
            log.error("reconcile failed", error=str(exc), exc_info=True)
            self.queue.add_rate_limited(key)
        else:
            if result.requeue_after is not None and result.requeue_after > 0:
                outcome = "requeue_after"
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
            elif result.requeue:
                outcome = "requeue"
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
        finally:
            metrics.ACTIVE_WORKERS.labels(self.name).dec()
            metrics.RECONCILE_TIME.labels(self.name).observe(self._clock.monotonic() - started)
        metrics.RECONCILE_TOTAL.labels(self.name, outcome).inc()
        log.debug("reconciled", outcome=outcome)  # every write of this pass is done


# -- handlers that map objects to keys ---------------------------------------------


def controller_owner_key(obj: Obj, *, api_group: str, kind: str) -> str | None:
    """The key of the object's controller owner when it is of ``kind`` in ``api_group``."""
    ref = controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    if str(ref.get("apiVersion", "")).rpartition("/")[0] != api_group:
        return None
    return make_key((obj.get("metadata") or {}).get("namespace"), str(ref["name"]))
