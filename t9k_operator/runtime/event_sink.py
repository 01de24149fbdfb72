"""Where recorded Events are written: core/v1 Event bodies, their names, and
the create and patch calls with their retries.

Events are named ``<object name>.<16 hex digits>`` (the record time in
nanoseconds, bumped to stay unique within the process) and live in the
involved object's namespace, or ``default`` for cluster-scoped objects. They
carry ``firstTimestamp``/``lastTimestamp`` (core/v1 style, no ``eventTime``),
``source.component``/``source.host``, ``reportingComponent`` and
``reportingInstance``. Messages longer than 1024 characters are truncated.

Writes that fail with a transient error (transport, 5xx, 429) are retried
twice (1 s, then 2 s later, on the injected clock) unless the recorder is
stopping; a create whose name is taken is tried once more under a random one.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import structlog

from t9k_operator.foundation.clock import Clock
from t9k_operator.kube.errors import (
    AlreadyExists,
    ServerError,
    TooManyRequests,
    TransportError,
)
from t9k_operator.objects import Obj
from t9k_operator.resources import EVENTS, Resource

log = structlog.get_logger(__name__)

MAX_MESSAGE_LENGTH: Final = 1024
# Longest object name that still leaves room for ".<16 hex>" in a 253-char name.
_MAX_NAME_PREFIX: Final = 253 - 17
_RETRY_DELAYS: Final = (1.0, 2.0)
_TRANSIENT = (TransportError, ServerError, TooManyRequests)


class EventClient(Protocol):
    """The part of :class:`~t9k_operator.kube.KubeClient` the recorder uses."""

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> Obj: ...


@dataclass(frozen=True)
class PendingEvent:
    """One recorded event, snapshotted at ``record`` time."""

    involved: tuple[tuple[str, str], ...]  # involvedObject fields, in a fixed order
    namespace: str
    name: str
    type_: str
    reason: str
    message: str
    wall: datetime
    mono: float


class EventSink:
    """Creates and patches Events for one reporting component and host."""

    def __init__(
        self,
        client: EventClient,
        component: str,
        host: str,
        *,
        clock: Clock,
        stopping: threading.Event,
    ) -> None:
        self._client = client
        self.component = component
        self.host = host
        self._clock = clock
        self._stopping = stopping
        self._last_name_ns = 0

    def patch(self, name: str, namespace: str, patch: Obj) -> Obj:
        """Merge-patch the Event ``name`` (its count, last timestamp and message)."""
        return self._write(
            lambda: self._client.patch(EVENTS, name, patch, namespace, patch_type="merge")
        )

    def create(self, p: PendingEvent, message: str, ts: str) -> str:
        """Create a new Event for ``p`` with ``count: 1``; return its name."""
        body = self._build(p, message, ts)
        try:
            created = self._create_once(body)
        except AlreadyExists:
            # Another writer picked the same name: try once more with a random suffix.
            prefix = body["metadata"]["name"].rsplit(".", 1)[0]
            body["metadata"]["name"] = f"{prefix}.{secrets.token_hex(8)}"
            created = self._create_once(body)
        return str((created.get("metadata") or {}).get("name") or body["metadata"]["name"])

    def _create_once(self, body: Obj) -> Obj:
        return self._write(lambda: self._client.create(EVENTS, body, body["metadata"]["namespace"]))

    def _write(self, call: Callable[[], Obj]) -> Obj:
        """Run ``call``; retry transient failures unless stopping."""
        attempt = 0
        while True:
            try:
                return call()
            except _TRANSIENT as exc:
                if attempt >= len(_RETRY_DELAYS) or self._stopping.is_set():
                    raise
                delay = _RETRY_DELAYS[attempt]
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, 10.0))
                attempt += 1
                log.debug("event write failed; retrying", error=str(exc), delay=delay)
                self._sleep(delay)

    def _sleep(self, seconds: float) -> None:
        # Interruptible: stop() must not wait out a backoff.
        self._clock.wait(self._stopping, seconds)

    def _event_name(self, obj_name: str, wall: datetime) -> str:
        ns = int(wall.timestamp() * 1_000_000) * 1000
        ns = max(ns, self._last_name_ns + 1)
        self._last_name_ns = ns
        return f"{obj_name[:_MAX_NAME_PREFIX]}.{ns & 0xFFFFFFFFFFFFFFFF:016x}"

    def _build(self, p: PendingEvent, message: str, ts: str) -> Obj:
        involved = {k: v for k, v in p.involved if v}
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self._event_name(p.name, p.wall), "namespace": p.namespace},
            "involvedObject": involved,
            "type": p.type_,
            "reason": p.reason,
            "message": message,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
