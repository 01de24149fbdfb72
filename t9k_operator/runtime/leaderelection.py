"""Leader election on a ``coordination.k8s.io/v1`` Lease, like client-go's.

Only the leader reconciles. :class:`LeaderElector` follows client-go's
``leaderelection`` package:

**Acquiring.** Every ``retry_period`` (plus up to 1.2x that of random jitter)
the elector reads the Lease. If it does not exist it is created with this
identity as holder. If another identity holds it, the elector takes it over
only once the lease has expired *as seen by the local monotonic clock*: the
record (``spec``) must not have changed for ``leaseDurationSeconds`` (of that
record) since this elector last saw it change. Wall-clock ``renewTime`` values
written by other hosts are never compared with the local wall clock, so clock
skew between nodes does not matter. A lease with an empty ``holderIdentity``
(released) is free at once. Taking over sets ``holderIdentity``,
``leaseDurationSeconds``, ``acquireTime`` and ``renewTime`` (micro-second
RFC 3339, ``2006-01-02T15:04:05.000000Z``) and increments ``leaseTransitions``.
Every write is a PUT carrying the resourceVersion that was read (or a POST
for a new Lease), so of two racing electors exactly one wins; the loser gets
Conflict/AlreadyExists and tries again later.

**Leading.** After acquiring, ``on_started_leading()`` is called *inline* in
the thread running :meth:`LeaderElector.run` and must return promptly (start
workers and return); renewal begins after it returns. Every ``retry_period``
the elector renews: first optimistically, a PUT of the Lease it last wrote,
then on any failure by reading the Lease and updating that. If no renewal has
succeeded for ``renew_deadline`` seconds (measured on the monotonic clock from
the start of the last successful attempt), or the Lease turns out to be held
by someone else, leadership is lost: ``on_stopped_leading()`` is called at
once and :meth:`run` returns (the Lease is not released then: it may no
longer be ours; peers take it over once it expires). Each API call made while leading is abandoned
when the renew deadline passes, so a hung connection cannot keep a stale
leader alive past the deadline. Because ``lease_duration > renew_deadline``,
a former leader stops before any peer can take over.

**Stopping.** :meth:`LeaderElector.stop` ends :meth:`run`. If leading,
``on_stopped_leading()`` is called first and then, with
``release_on_cancel`` (default), the Lease is released (``holderIdentity``
emptied, ``leaseDurationSeconds: 1``, ``leaseTransitions`` kept) so a peer
takes over without waiting for the lease to expire. ``on_stopped_leading``
is thus called, exactly once, whenever ``on_started_leading`` was called,
whether leadership was lost or given up; it runs in the thread that ends the
leadership (the :meth:`run` thread, or the caller of :meth:`stop` if
:meth:`run` is not running). An elector is single-use after :meth:`stop`.

Waits sleep on the injected :class:`~t9k_operator.runtime.clock.Clock`; with the real
clock they wait on the stop event instead, so :meth:`stop` is prompt. For
deterministic tests :meth:`LeaderElector.step` runs one iteration of the loop
and returns the delay the loop would wait before the next one.
"""

from __future__ import annotations

import copy
import math
import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, Protocol, TypeVar

import structlog

from t9k_operator.kube.errors import AlreadyExists, ApiError, Conflict, NotFound, TransportError
from t9k_operator.kube.resources import LEASES, Resource
from t9k_operator.objects import Obj
from t9k_operator.runtime.clock import REAL_CLOCK, Clock

log = structlog.get_logger(__name__)

T = TypeVar("T")

JITTER_FACTOR: Final = 1.2


class LeaseClient(Protocol):
    """The part of :class:`~t9k_operator.kube.KubeClient` the elector uses."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj: ...

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj: ...


def format_micro_time(ts: datetime) -> str:
    """``metav1.MicroTime`` format: ``2006-01-02T15:04:05.000000Z``."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _CallTimeout(TransportError):
    """An API call did not answer before the deadline."""


class _HeldByOther(Exception):
    """While leading, the Lease was found held by another identity."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class LeaderElector:
    """Lease-based leader election; see the module docstring."""

    def __init__(
        self,
        client: LeaseClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock = REAL_CLOCK,
        release_on_cancel: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if retry_period <= 0:
            raise ValueError("retry_period must be > 0")
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline must be greater than {JITTER_FACTOR} * retry_period")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._rng = rng or random.Random()
        # Whole seconds, rounded up so peers never wait less than lease_duration.
        self._duration_seconds = max(1, math.ceil(lease_duration))
        self._log = log.bind(lease=f"{namespace}/{name}", identity=identity)

        # State of the election, owned by the thread that runs step().
        self._lease: Obj | None = None  # the Lease object last read or written
        self._observed: Obj | None = None  # the spec last seen
        self._observed_time = 0.0  # monotonic time it was first seen
        self._last_renew = 0.0  # monotonic start of the last successful write while leading
        self._lost = False

        self._state_lock = threading.Lock()  # guards _leading and the end-of-leadership path
        self._leading = False
        self._stop = threading.Event()
        self._running = False
        self._done = threading.Event()
        self._done.set()

    # -- public ------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True between ``on_started_leading`` and ``on_stopped_leading``."""
        return self._leading

    def leader(self) -> str:
        """The holder identity last observed on the Lease ("" if none or unknown)."""
        observed = self._observed
        return str((observed or {}).get("holderIdentity") or "")

    def run(self) -> None:
        """Campaign, lead, and return when leadership is lost or :meth:`stop` is called.

        Blocks; call it from a dedicated thread.
        """
        with self._state_lock:
            if self._running:
                raise RuntimeError("LeaderElector.run is already running")
            self._running = True
            self._done.clear()
        self._lost = False
        self._log.info("leader election started")
        try:
            while not self._stop.is_set():
                delay = self.step()
                if self._lost:
                    break
                self._wait(delay)
        finally:
            try:
                self._end_leadership("stopped")
            finally:
                with self._state_lock:
                    self._running = False
                    self._done.set()
                self._log.info("leader election ended", lost=self._lost)

    def stop(self, timeout: float | None = 10.0) -> None:
        """End :meth:`run`; if leading, stop leading and (by default) release the Lease.

        Waits up to ``timeout`` seconds for :meth:`run` to finish (and so for
        the release). If :meth:`run` is not running, does the work itself.
        """
        self._stop.set()
        with self._state_lock:
            running = self._running
        if running:
            if not self._done.wait(timeout):
                self._log.warning("leader election did not stop in time")
        else:
            self._end_leadership("stopped")

    def step(self) -> float:
        """One iteration of :meth:`run`: try to acquire or renew once.

        Returns the seconds to wait before the next iteration. After a loss
        (``on_stopped_leading`` called) :meth:`run` would return instead.
        """
        if self._stop.is_set():
            return 0.0
        if not self._leading:
            start = self._clock.monotonic()
            if self._attempt(self.renew_deadline):
                self._start_leading(start)
                return self.retry_period
            return self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)

        start = self._clock.monotonic()
        remaining = self._last_renew + self.renew_deadline - start
        if remaining > 0:
            try:
                if self._attempt(remaining):
                    self._last_renew = start
                    return self.retry_period
            except _HeldByOther as exc:
                self._log.warning("lease taken by another holder", holder=exc.holder)
                self._lose("lease held by another identity")
                return 0.0
        left = self._last_renew + self.renew_deadline - self._clock.monotonic()
        if left <= 0:
            self._lose("failed to renew the lease within the renew deadline")
            return 0.0
        self._log.warning("failed to renew the lease; retrying", seconds_left=round(left, 3))
        # Wake up no later than the deadline, so the loss is noticed at once.
        return min(self.retry_period, left)

    def _attempt(self, timeout: float) -> bool:
        """One acquire/renew attempt; unexpected errors count as a failed attempt."""
        try:
            return self._try_acquire_or_renew(timeout)
        except _HeldByOther:
            raise
        except Exception:
            self._log.exception("unexpected error in leader election")
            return False

    # -- transitions -------------------------------------------------------------

    def _start_leading(self, start: float) -> None:
        with self._state_lock:
            if self._stop.is_set():
                # stop() raced with the acquisition: give the lease back at once.
                self._leading = True
                started = False
            else:
                self._leading = True
                started = True
            self._last_renew = start
        if not started:
            self._end_leadership("stopped", call_callback=False)
            return
        self._log.info("became leader")
        try:
            self._on_started()
        except BaseException:
            self._log.exception("on_started_leading failed; giving up leadership")
            self._lost = True
            self._end_leadership("on_started_leading failed")
            raise

    def _lose(self, why: str) -> None:
        self._lost = True
        with self._state_lock:
            if not self._leading:
                return
            self._leading = False
        self._log.warning("lost leadership", why=why)
        self._call_stopped()

    def _end_leadership(self, why: str, *, call_callback: bool = True) -> None:
        """Stop leading (callback first), then release the lease if configured."""
        with self._state_lock:
            if not self._leading:
                return
            self._leading = False
        self._log.info("stopping leading", why=why)
        if call_callback:
            self._call_stopped()
        if self.release_on_cancel:
            self._release()

    def _call_stopped(self) -> None:
        try:
            self._on_stopped()
        except Exception:
            self._log.exception("on_stopped_leading failed")

    # -- the Lease ---------------------------------------------------------------

    def _spec(self, old: Obj | None, now: datetime, *, keep_acquire: bool) -> Obj:
        spec: Obj = dict(old or {})
        stamp = format_micro_time(now)
        transitions = int(spec.get("leaseTransitions") or 0)
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=self._duration_seconds,
            renewTime=stamp,
            leaseTransitions=transitions if keep_acquire else transitions + 1,
        )
        if not keep_acquire or not spec.get("acquireTime"):
            spec["acquireTime"] = stamp
        return spec

    def _observe(self, spec: Obj) -> None:
        """Remember ``spec``; restart the local expiry timer if it changed."""
        if spec != self._observed:
            old_holder = self.leader()
            self._observed = copy.deepcopy(spec)
            self._observed_time = self._clock.monotonic()
            new_holder = self.leader()
            if new_holder != old_holder:
                self._log.info("new leader observed", holder=new_holder or None)

    def _observed_valid(self) -> bool:
        """Whether the observed lease is unexpired on the local monotonic clock."""
        spec = self._observed or {}
        duration = spec.get("leaseDurationSeconds")
        seconds = float(duration) if duration else self.lease_duration
        return self._observed_time + seconds > self._clock.monotonic()

    def _try_acquire_or_renew(self, timeout: float) -> bool:
        """Acquire or renew once. Raises :class:`_HeldByOther` only while leading."""
        now = self._clock.now()
        deadline = self._clock.monotonic() + timeout

        # Fast path while leading: update the Lease we wrote last, no read.
        if self._leading and self._lease is not None:
            lease = copy.deepcopy(self._lease)
            lease["spec"] = self._spec(lease.get("spec"), now, keep_acquire=True)
            try:
                written = self._call(partial(self._client.replace, LEASES, lease), deadline)
            except ApiError as exc:
                self._log.info("optimistic renew failed; re-reading the lease", error=str(exc))
            else:
                self._wrote(written, lease)
                return True

        try:
            current = self._call(
                partial(self._client.get, LEASES, self.name, self.namespace), deadline
            )
        except NotFound:
            return self._create(now, deadline)
        except ApiError as exc:
            self._log.warning("could not read the lease", error=str(exc))
            return False

        self._lease = current
        spec: Obj = current.get("spec") or {}
        self._observe(spec)
        holder = str(spec.get("holderIdentity") or "")
        if holder and holder != self.identity:
            if self._leading:
                raise _HeldByOther(holder)
            if self._observed_valid():
                self._log.debug("lease held by another", holder=holder)
                return False

        lease = copy.deepcopy(current)
        lease["spec"] = self._spec(spec, now, keep_acquire=holder == self.identity)
        try:
            written = self._call(partial(self._client.replace, LEASES, lease), deadline)
        except Conflict as exc:
            self._log.info("lost a race to update the lease", error=str(exc))
            return False
        except ApiError as exc:
            self._log.warning("could not update the lease", error=str(exc))
            return False
        if holder != self.identity:
            self._log.info(
                "took over the lease",
                previous_holder=holder or None,
                transitions=lease["spec"]["leaseTransitions"],
            )
        self._wrote(written, lease)
        return True

    def _create(self, now: datetime, deadline: float) -> bool:
        spec = self._spec(None, now, keep_acquire=False)
        spec["leaseTransitions"] = 0
        body: Obj = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        try:
            written = self._call(
                partial(self._client.create, LEASES, body, self.namespace), deadline
            )
        except AlreadyExists:
            self._log.info("lost a race to create the lease")
            return False
        except ApiError as exc:
            self._log.warning("could not create the lease", error=str(exc))
            return False
        self._log.info("created the lease")
        self._wrote(written, body)
        return True

    def _wrote(self, written: Obj, sent: Obj) -> None:
        # Keep the server's answer (it has the new resourceVersion) when there is one.
        self._lease = written if written.get("metadata") else sent
        self._observe(sent.get("spec") or {})

    def _release(self) -> None:
        """Give the Lease up: empty holder, 1 s duration, transitions kept."""
        deadline = self._clock.monotonic() + self.renew_deadline
        lease = copy.deepcopy(self._lease) if self._lease is not None else None
        for attempt in range(2):
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                self._log.info("lease not held by us; nothing to release")
                return
            stamp = format_micro_time(self._clock.now())
            spec: Obj = dict(lease.get("spec") or {})
            spec.update(
                holderIdentity="", leaseDurationSeconds=1, acquireTime=stamp, renewTime=stamp
            )
            lease["spec"] = spec
            body = lease
            try:
                written = self._call(partial(self._client.replace, LEASES, body), deadline)
            except Conflict:
                if attempt:
                    break
                # Our copy is stale: re-read and release if it is still ours.
                try:
                    lease = self._call(
                        partial(self._client.get, LEASES, self.name, self.namespace), deadline
                    )
                except ApiError as exc:
                    self._log.warning("could not release the lease", error=str(exc))
                    return
                continue
            except ApiError as exc:
                self._log.warning("could not release the lease", error=str(exc))
                return
            self._wrote(written, body)
            self._log.info("released the lease")
            return
        self._log.warning("could not release the lease: it keeps changing")

    # -- plumbing ----------------------------------------------------------------

    def _call(self, fn: Callable[[], T], deadline: float) -> T:
        """Run ``fn``, giving up (:class:`_CallTimeout`) at ``deadline`` (monotonic)."""
        remaining = deadline - self._clock.monotonic()
        if remaining <= 0:
            raise _CallTimeout("lease request not sent: deadline passed")
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["result"] = fn()
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        thread = threading.Thread(target=target, name="leaderelection-call", daemon=True)
        thread.start()
        if not done.wait(remaining):
            raise _CallTimeout(f"lease request did not answer within {remaining:.1f}s")
        if "error" in box:
            raise box["error"]
        result: T = box["result"]
        return result

    def _wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        # Interruptible: stop() must not wait out a backoff.
        self._clock.wait(self._stop, seconds)
