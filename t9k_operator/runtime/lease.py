"""The Lease side of leader election: reading, judging and writing the Lease.

:class:`~t9k_operator.runtime.leaderelection.LeaderElector` is a loop and a
state machine: it decides *when* to campaign, renew or give up, and runs the
callbacks. Everything about the ``coordination.k8s.io/v1`` Lease object itself
lives here, so the elector never handles a Lease and this module never handles
leadership:

* Pure functions over the record: the holder named by a Lease ``spec``, and the
  spec or body written to acquire or renew (:func:`held_spec`,
  :func:`new_lease`) and to release (:func:`released_spec`), with times in
  ``metav1.MicroTime``.
* :class:`LeaseLock`, one identity's hold on one Lease (client-go's
  ``resourcelock.LeaseLock`` plus the record-keeping of its elector): the copy
  last read or written, whose resourceVersion every PUT carries; the spec last
  observed and the local monotonic time it was first seen, on which alone
  expiry is judged; and the acquire/renew and release attempts. Every API call
  is abandoned at a deadline, so a hung connection cannot outlive it.

The lock is driven from the elector's thread and logs to the logger the
elector hands it (bound to the lease and identity).
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from t9k_operator.foundation.clock import Clock
from t9k_operator.kube.errors import AlreadyExists, ApiError, Conflict, NotFound, TransportError
from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource

T = TypeVar("T")


class LeaseClient(Protocol):
    """The part of :class:`~t9k_operator.kube.KubeClient` the elector uses."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj: ...

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj: ...


class HeldByOther(Exception):
    """While leading, the Lease was found held by another identity."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class _CallTimeout(TransportError):
    """An API call did not answer before the deadline."""


# -- the record ----------------------------------------------------------------


def format_micro_time(ts: datetime) -> str:
    """``metav1.MicroTime`` format: ``2006-01-02T15:04:05.000000Z``."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def holder_of(spec: Obj | None) -> str:
    """The ``holderIdentity`` a Lease spec names ("" if none)."""
    return str((spec or {}).get("holderIdentity") or "")


def held_spec(
    old: Obj | None, identity: str, duration_seconds: int, now: datetime, *, keep_acquire: bool
) -> Obj:
    """``old`` as held by ``identity`` from ``now``; ``old`` itself is not changed.

    With ``keep_acquire`` a renewal: ``leaseTransitions`` and ``acquireTime``
    (if set) are kept. Without, a takeover: both are moved on.
    """
    spec: Obj = dict(old or {})
    stamp = format_micro_time(now)
    transitions = int(spec.get("leaseTransitions") or 0)
    spec.update(
        holderIdentity=identity,
        leaseDurationSeconds=duration_seconds,
        renewTime=stamp,
        leaseTransitions=transitions if keep_acquire else transitions + 1,
    )
    if not keep_acquire or not spec.get("acquireTime"):
        spec["acquireTime"] = stamp
    return spec


def new_lease(
    namespace: str, name: str, identity: str, duration_seconds: int, now: datetime
) -> Obj:
    """The body that creates the Lease held by ``identity``, with no transitions yet."""
    spec = held_spec(None, identity, duration_seconds, now, keep_acquire=False)
    spec["leaseTransitions"] = 0
    return {
        "apiVersion": LEASES.api_version,
        "kind": LEASES.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def released_spec(old: Obj | None, now: datetime) -> Obj:
    """``old`` given up: empty holder, 1 s duration, ``leaseTransitions`` kept."""
    stamp = format_micro_time(now)
    spec: Obj = dict(old or {})
    spec.update(holderIdentity="", leaseDurationSeconds=1, acquireTime=stamp, renewTime=stamp)
    return spec


# -- the lock ------------------------------------------------------------------


class LeaseLock:
    """``identity``'s hold on the Lease ``namespace/name``; see the module docstring."""

    def __init__(
        self,
        client: LeaseClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float,
        clock: Clock,
        log: Any,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._lease_duration = lease_duration
        # Whole seconds, rounded up so peers never wait less than lease_duration.
        self._duration_seconds = max(1, math.ceil(lease_duration))
        self._clock = clock
        self._log = log

        self._lease: Obj | None = None  # the Lease object last read or written
        self._observed: Obj | None = None  # the spec last seen
        self._observed_time = 0.0  # monotonic time it was first seen

    def holder(self) -> str:
        """The holder identity last observed on the Lease ("" if none or unknown)."""
        return holder_of(self._observed)

    def try_acquire_or_renew(self, timeout: float, *, leading: bool) -> bool:
        """Acquire or renew once. Raises :class:`HeldByOther` only while ``leading``."""
        now = self._clock.now()
        deadline = self._clock.monotonic() + timeout

        # Fast path while leading: update the Lease we wrote last, no read.
        if leading and self._lease is not None:
            lease = copy.deepcopy(self._lease)
            lease["spec"] = self._held(lease.get("spec"), now, keep_acquire=True)
            try:
                written = self._call(partial(self._client.replace, LEASES, lease), deadline)
            except ApiError as exc:
                self._log.info("optimistic renew failed; re-reading the lease", error=str(exc))
            else:
                self._wrote(written, lease)
                return True

        try:
            current = self._read(deadline)
        except NotFound:
            return self._create(now, deadline)
        except ApiError as exc:
            self._log.warning("could not read the lease", error=str(exc))
            return False

        self._lease = current
        spec: Obj = current.get("spec") or {}
        self._observe(spec)
        holder = holder_of(spec)
        if holder and holder != self.identity:
            if leading:
                raise HeldByOther(holder)
            if self._observed_valid():
                self._log.debug("lease held by another", holder=holder)
                return False

        lease = copy.deepcopy(current)
        lease["spec"] = self._held(spec, now, keep_acquire=holder == self.identity)
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

    def release(self, timeout: float) -> None:
        """Give the Lease up if it is still ours: empty holder, 1 s duration, transitions kept."""
        deadline = self._clock.monotonic() + timeout
        lease = copy.deepcopy(self._lease) if self._lease is not None else None
        for attempt in range(2):
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                self._log.info("lease not held by us; nothing to release")
                return
            lease["spec"] = released_spec(lease.get("spec"), self._clock.now())
            body = lease
            try:
                written = self._call(partial(self._client.replace, LEASES, body), deadline)
            except Conflict:
                if attempt:
                    break
                # Our copy is stale: re-read and release if it is still ours.
                try:
                    lease = self._read(deadline)
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

    def _held(self, old: Obj | None, now: datetime, *, keep_acquire: bool) -> Obj:
        return held_spec(old, self.identity, self._duration_seconds, now, keep_acquire=keep_acquire)

    def _create(self, now: datetime, deadline: float) -> bool:
        body = new_lease(self.namespace, self.name, self.identity, self._duration_seconds, now)
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

    def _observe(self, spec: Obj) -> None:
        """Remember ``spec``; restart the local expiry timer if it changed."""
        if spec != self._observed:
            old_holder = self.holder()
            self._observed = copy.deepcopy(spec)
            self._observed_time = self._clock.monotonic()
            new_holder = self.holder()
            if new_holder != old_holder:
                self._log.info("new leader observed", holder=new_holder or None)

    def _observed_valid(self) -> bool:
        """Whether the observed lease is unexpired on the local monotonic clock."""
        spec = self._observed or {}
        duration = spec.get("leaseDurationSeconds")
        seconds = float(duration) if duration else self._lease_duration
        return self._observed_time + seconds > self._clock.monotonic()

    # -- plumbing ----------------------------------------------------------------

    def _read(self, deadline: float) -> Obj:
        """GET the Lease, giving up at ``deadline`` (monotonic)."""
        get = partial(self._client.get, LEASES, self.name, self.namespace)
        return self._call(get, deadline)

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
