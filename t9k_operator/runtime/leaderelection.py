"""Leader election on a ``coordination.k8s.io/v1`` Lease, like client-go's.

Only the leader reconciles. :class:`LeaderElector` follows client-go's
``leaderelection`` package; its Lease and timings come in one
:class:`LeaderElectionOptions`, built once from the command line:

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

Waits sleep on the injected :class:`~t9k_operator.foundation.clock.Clock`; with the real
clock they wait on the stop event instead, so :meth:`stop` is prompt. For
deterministic tests :meth:`LeaderElector.step` runs one iteration of the loop
and returns the delay the loop would wait before the next one.

This module owns the loop and the state machine (leading or not, the renew
deadline, the callbacks, stopping). The Lease itself, reading it, judging its
expiry and writing the acquire, renew and release bodies, is
:class:`~t9k_operator.runtime.lease.LeaseLock`'s, in :mod:`t9k_operator.runtime.lease`.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.runtime.lease import HeldByOther, LeaseClient, LeaseLock

log = structlog.get_logger(__name__)

JITTER_FACTOR: Final = 1.2


@dataclass(frozen=True)
class LeaderElectionOptions:
    """The Lease to campaign for and the election's timings in seconds, one field per flag.

    Timings default to controller-runtime's. :class:`LeaderElector` refuses options
    that break ``lease_duration > renew_deadline > JITTER_FACTOR * retry_period``.
    """

    namespace: str = "t9k-system"
    lease_name: str = "t9k-operator-leader"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """Lease-based leader election; see the module docstring."""

    def __init__(
        self,
        client: LeaseClient,
        options: LeaderElectionOptions,
        *,
        identity: str,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Clock = REAL_CLOCK,
        release_on_cancel: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if options.retry_period <= 0:
            raise ValueError("retry_period must be > 0")
        if options.lease_duration <= options.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if options.renew_deadline <= JITTER_FACTOR * options.retry_period:
            raise ValueError(f"renew_deadline must be greater than {JITTER_FACTOR} * retry_period")
        self.options = options
        self.identity = identity
        self.release_on_cancel = release_on_cancel
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._rng = rng or random.Random()
        self._log = log.bind(lease=f"{options.namespace}/{options.lease_name}", identity=identity)
        self._lease = LeaseLock(
            client,
            namespace=options.namespace,
            name=options.lease_name,
            identity=identity,
            lease_duration=options.lease_duration,
            clock=clock,
            log=self._log,
        )

        # State of the election, owned by the thread that runs step().
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
        return self._lease.holder()

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
            if self._attempt(self.options.renew_deadline):
                self._start_leading(start)
                return self.options.retry_period
            return self.options.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)

        start = self._clock.monotonic()
        remaining = self._last_renew + self.options.renew_deadline - start
        if remaining > 0:
            try:
                if self._attempt(remaining):
                    self._last_renew = start
                    return self.options.retry_period
            except HeldByOther as exc:
                self._log.warning("lease taken by another holder", holder=exc.holder)
                self._lose("lease held by another identity")
                return 0.0
        left = self._last_renew + self.options.renew_deadline - self._clock.monotonic()
        if left <= 0:
            self._lose("failed to renew the lease within the renew deadline")
            return 0.0
        self._log.warning("failed to renew the lease; retrying", seconds_left=round(left, 3))
        # Wake up no later than the deadline, so the loss is noticed at once.
        return min(self.options.retry_period, left)

    def _attempt(self, timeout: float) -> bool:
        """One acquire/renew attempt; unexpected errors count as a failed attempt."""
        try:
            return self._lease.try_acquire_or_renew(timeout, leading=self._leading)
        except HeldByOther:
            raise
        except Exception:
            self._log.exception("unexpected error in leader election")
            return False

    # -- transitions -------------------------------------------------------------

    def _start_leading(self, start: float) -> None:
        with self._state_lock:
            # If stop() raced with the acquisition, give the lease back at once.
            started = not self._stop.is_set()
            self._leading = True
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

    def _step_down(self) -> bool:
        """Mark this process as no longer leading; False if it was not."""
        with self._state_lock:
            if not self._leading:
                return False
            self._leading = False
            return True

    def _lose(self, why: str) -> None:
        self._lost = True
        if not self._step_down():
            return
        self._log.warning("lost leadership", why=why)
        self._call_stopped()

    def _end_leadership(self, why: str, *, call_callback: bool = True) -> None:
        """Stop leading (callback first), then release the lease if configured."""
        if not self._step_down():
            return
        self._log.info("stopping leading", why=why)
        if call_callback:
            self._call_stopped()
        if self.release_on_cancel:
            self._lease.release(self.options.renew_deadline)

    def _call_stopped(self) -> None:
        try:
            self._on_stopped()
        except Exception:
            self._log.exception("on_stopped_leading failed")

    # -- plumbing ----------------------------------------------------------------

    def _wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        # Interruptible: stop() must not wait out a backoff.
        self._clock.wait(self._stop, seconds)
