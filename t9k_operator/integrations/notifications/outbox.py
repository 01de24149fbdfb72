"""The deliverer: sends what the jobs' records hold pending, on threads of its
own, so a slow or dead endpoint never delays a reconcile.

Each endpoint has its queue (at most ``--notification-queue`` deliveries)
and up to :data:`WORKERS` threads, started when something is queued for it
and ended once idle a while: an endpoint that is slow, down or asks to wait
(``Retry-After``) holds only its own queue. A delivery is tried until the
endpoint takes it or the message has waited ``--notification-give-up``
since it was recorded, with exponential backoff and jitter between tries
(``backoff.py``). Its outcome is kept in memory (:meth:`Outbox.outcomes`,
what the integration reads) and the job queued, whose next reconcile
records it; once the record holds it, it is forgotten here.

What is queued comes from the records alone: the jobs' informer events, and
a pass over every cached job each :data:`RESYNC` seconds (which also picks up
what a full queue turned away, and everything after this replica comes to
lead). Nothing is sent while the replica does not lead. Memory is bounded by
the queues and the outcomes not yet recorded.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import structlog

from t9k_operator.foundation.clock import Clock
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.integrations.notifications import formats, message
from t9k_operator.integrations.notifications.backoff import wait
from t9k_operator.integrations.notifications.channels import EMAIL, Invalid, Smtp, endpoint
from t9k_operator.integrations.notifications.formats import HttpRequest
from t9k_operator.integrations.notifications.integration import Options
from t9k_operator.integrations.notifications.metrics import DELIVERIES, QUEUED
from t9k_operator.integrations.notifications.record import (
    DELIVERED,
    GAVE_UP,
    Outcome,
    pending,
)
from t9k_operator.integrations.notifications.send import Answer, mail, post
from t9k_operator.objects import Obj, format_time, parse_time
from t9k_operator.reconcilers.serving import Host, Route

log = structlog.get_logger(__name__)

RESYNC = 10.0
"""Seconds between two passes over every cached job."""
WORKERS = 4
"""Threads an endpoint's queue has at most: its deliveries in flight at once."""
LEADING_CHECK = 1.0
"""Seconds between two looks at whether this replica leads."""
IDLE = 60.0
"""Seconds an endpoint's thread waits for more before it ends."""


@dataclass(frozen=True)
class Delivery:
    plural: str
    namespace: str
    name: str
    uid: str
    id: str  # the message's
    endpoint: str  # namespace/name of its Secret


class _Lane:
    """One endpoint's queue and its threads."""

    def __init__(self) -> None:
        self.items: deque[Delivery] = deque()
        self.threads: set[threading.Thread] = set()


class Outbox:
    """The deliverer, a server of the manager's, and what the integration reads."""

    def __init__(
        self,
        host: Host,
        secrets: SharedInformer,
        options: Options,
        *,
        post: Callable[[HttpRequest], Answer] = post,
        mail: Callable[[EmailMessage, Smtp], Answer] = mail,
        rand: Callable[[], float] = random.random,
        resync: float = RESYNC,
        idle: float = IDLE,
    ) -> None:
        self.host, self.options = host, options
        self._secrets = secrets
        self.clock: Clock = host.ctx.clock
        self._post, self._mail, self._rand = post, mail, rand
        self._resync, self._idle = resync, idle
        self._lock = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._known: set[tuple[str, str]] = set()  # (message id, endpoint) queued or in hand
        self._outcomes: dict[str, dict[str, dict[str, Outcome]]] = {}  # uid -> id -> endpoint
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the integration reads (Directory) ---------------------------------------

    @property
    def namespace(self) -> str | None:
        return self.host.namespace

    def secrets(self, namespace: str) -> Sequence[Obj]:
        return [
            s
            for s in self._secrets.list()
            if (s.get("metadata") or {}).get("namespace") == namespace
        ]

    def outcomes(self, uid: str) -> Mapping[str, Mapping[str, Outcome]]:
        with self._lock:
            found = self._outcomes.get(uid)
            return {k: dict(v) for k, v in found.items()} if found else {}

    # -- the server -----------------------------------------------------------------

    def start(self) -> None:
        for plural, route in self.host.routes.items():
            route.jobs.add_event_handler(*handlers(self, plural))
        self._thread = threading.Thread(target=self._run, name="notifications", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
            threads = [t for lane in self._lanes.values() for t in lane.threads]
        for thread in [self._thread, *threads]:
            if thread is not None:
                thread.join(15)

    def _run(self) -> None:
        """A pass over every job each resync period while leading, and at once
        when this replica comes to lead (the informers' events before that
        were not acted on)."""
        leading, due = False, 0.0
        while not self._stop.is_set():
            now = self.clock.monotonic()
            if not self.host.ctx.is_leader():
                leading = False
            elif not leading or now >= due:
                leading, due = True, now + self._resync
                try:
                    self.sweep()
                except Exception as exc:  # never the end of the deliverer
                    log.error("notifications: a pass over the jobs failed", error=str(exc))
            self.clock.wait(self._stop, LEADING_CHECK)

    def sweep(self) -> None:
        """Offer every cached job's pending messages."""
        for plural, route in self.host.routes.items():
            for job in route.jobs.list():
                self.offer(plural, job)

    # -- queueing -------------------------------------------------------------------

    def offer(self, plural: str, job: Obj) -> None:
        """Queue what ``job``'s record holds pending and is not queued yet;
        forget the outcomes it has recorded."""
        record = (job.get("status") or {}).get("notifications")
        meta = job.get("metadata") or {}
        uid = str(meta.get("uid"))
        if not record:
            return
        self._recorded(uid, record)
        if not self.host.ctx.is_leader():
            return
        for m in pending(record):
            done = {d.get("endpoint") for d in m.get("deliveries") or []}
            for ep in m.get("to") or []:
                if ep in done:
                    continue
                d = Delivery(plural, str(meta["namespace"]), str(meta["name"]), uid, m["id"], ep)
                self._queue(d)

    def _queue(self, d: Delivery) -> None:
        key = (d.id, d.endpoint)
        with self._lock:
            if key in self._known or self._stop.is_set():
                return
            lane = self._lanes.setdefault(d.endpoint, _Lane())
            if len(lane.items) >= self.options.queue:
                return  # the record keeps it: a later pass queues it
            self._known.add(key)
            lane.items.append(d)
            QUEUED.inc()
            if len(lane.threads) < min(WORKERS, len(lane.items) + len(lane.threads)):
                thread = threading.Thread(
                    target=self._drain, args=(d.endpoint,), name=f"notify {d.endpoint}", daemon=True
                )
                lane.threads.add(thread)
                thread.start()
            self._lock.notify_all()

    def _recorded(self, uid: str, record: Mapping[str, Any]) -> None:
        """Forget the outcomes the record holds (and their keys)."""
        with self._lock:
            found = self._outcomes.get(uid)
            if not found:
                return
            for m in record.get("messages") or []:
                kept = found.get(str(m.get("id")))
                if not kept:
                    continue
                for d in m.get("deliveries") or []:
                    if kept.pop(str(d.get("endpoint")), None) is not None:
                        self._known.discard((str(m.get("id")), str(d.get("endpoint"))))
                if not kept:
                    del found[str(m.get("id"))]
            if not found:
                del self._outcomes[uid]

    def forget(self, uid: str) -> None:
        with self._lock:
            for mid, eps in self._outcomes.pop(uid, {}).items():
                for ep in eps:
                    self._known.discard((mid, ep))

    # -- delivering ------------------------------------------------------------------

    def _drain(self, ep: str) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                lane = self._lanes[ep]
                if not lane.items and not self._stop.is_set():
                    self._lock.wait(self._idle)
                if self._stop.is_set() or not lane.items:
                    lane.threads.discard(me)
                    if not lane.items and not lane.threads:
                        del self._lanes[ep]
                    return
                d = lane.items.popleft()
                QUEUED.dec()
            try:
                self._deliver(d)
            except Exception as exc:  # never the end of the endpoint's thread
                log.error("notifications: a delivery failed", endpoint=ep, error=str(exc))
                self._release(d)

    def _release(self, d: Delivery) -> None:
        """Let ``d`` be queued again (by a later pass): it was not done."""
        with self._lock:
            self._known.discard((d.id, d.endpoint))

    def _deliver(self, d: Delivery) -> None:
        attempts = 0
        while True:
            found = entry_of(self.host.routes, d)
            if found is None or self._stop.is_set() or not self.host.ctx.is_leader():
                self._release(d)
                return
            job, entry = found
            now = self.clock.now()
            queued = parse_time(entry.get("queuedTime")) or now
            ns, _, name = d.endpoint.partition("/")
            secret = self._secrets.get(ns, name)
            if secret is None:
                self._done(d, GAVE_UP, max(attempts, 1), "", f"no endpoint Secret {d.endpoint}")
                return
            try:
                ep = endpoint(secret)
            except Invalid as exc:
                self._done(d, GAVE_UP, max(attempts, 1), "", f"endpoint {d.endpoint}: {exc}")
                return
            msg = message.build(job, entry, self.options.console_url, d.plural, now)
            if ep.type == EMAIL:
                assert ep.smtp is not None
                answer = self._mail(formats.email(msg, ep), ep.smtp)
            else:
                answer = self._post(formats.request(msg, ep, now.timestamp()))
            attempts += 1
            if answer.ok:
                self._done(d, DELIVERED, attempts, ep.type)
                return
            pause = wait(attempts, answer.asked, self._rand(), self.options.backoff_cap)
            waited = (now - queued).total_seconds()
            if not answer.retry or waited + pause > self.options.give_up:
                why = answer.error if answer.retry else f"{answer.error}, not retried"
                self._done(d, GAVE_UP, attempts, ep.type, why)
                return
            DELIVERIES.labels(ep.type, "retried").inc()
            log.info(
                "notifications: a try failed; trying again",
                job=f"{d.namespace}/{d.name}",
                endpoint=d.endpoint,
                attempt=attempts,
                error=answer.error,
                wait_seconds=round(pause, 2),
            )
            if self.clock.wait(self._stop, pause):
                self._release(d)
                return

    def _done(self, d: Delivery, state: str, attempts: int, channel: str, error: str = "") -> None:
        """Keep ``d``'s outcome for the integration, and queue its job."""
        outcome = Outcome(d.endpoint, state, attempts, format_time(self.clock.now()), error)
        with self._lock:
            self._outcomes.setdefault(d.uid, {}).setdefault(d.id, {})[d.endpoint] = outcome
        DELIVERIES.labels(
            channel or "unknown", "delivered" if state == DELIVERED else "gave_up"
        ).inc()
        if state != DELIVERED:
            log.warning(
                "notifications: gave up a delivery",
                job=f"{d.namespace}/{d.name}",
                endpoint=d.endpoint,
                attempts=attempts,
                error=error,
            )
        route = self.host.routes.get(d.plural)
        if route is not None:
            route.enqueue_after(f"{d.namespace}/{d.name}", 0.0)


def handlers(
    box: Outbox, plural: str
) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
    """The informer's handlers of a job kind: offer the job's pending
    messages; forget a deleted job's outcomes."""

    def added(job: Obj) -> None:
        box.offer(plural, job)

    def updated(_old: Obj, job: Obj) -> None:
        box.offer(plural, job)

    def deleted(job: Obj) -> None:
        box.forget(str((job.get("metadata") or {}).get("uid")))

    return added, updated, deleted


def entry_of(routes: Mapping[str, Route], d: Delivery) -> tuple[Obj, Mapping[str, Any]] | None:
    """The cached job and its record's message, while they still call for ``d``."""
    route = routes.get(d.plural)
    job = route.jobs.get(d.namespace, d.name) if route else None
    if job is None or str(job["metadata"].get("uid")) != d.uid:
        return None
    for m in pending((job.get("status") or {}).get("notifications")):
        if m.get("id") == d.id:
            done = {x.get("endpoint") for x in m.get("deliveries") or []}
            return (job, m) if d.endpoint not in done else None
    return None
