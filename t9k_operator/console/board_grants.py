"""Grants to one job's TensorBoard: the capability in the URL of an opened board.

A TensorBoard opened from the console runs in a sandboxed page (an opaque
origin, :mod:`~.tensorboard_proxy`), so its requests carry no cookie of the
console's. What lets them through instead is a :class:`Grant`: minted when
the person opens the board from the job's page (their session's client, and
the one Service proxy path of that job's TensorBoard), named by a random
token that stands in the URL path, ``/tb/<token>/...``. The token is
unguessable (32 random bytes), is looked up by its SHA-256 (no timing of
the secret itself), and lasts while its session lives, until it has gone
unused for :data:`IDLE_SECONDS`, and never past :data:`MAX_SECONDS`. It
gives nothing but that TensorBoard: never the console's pages, nor any other
Service.

One store per process (:data:`GRANTS`): the console's apps (one per signed-in
person with ``--in-cluster``) share it, as a board's request carries no
cookie to find the person's app by.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from t9k_operator import kube

IDLE_SECONDS = 30 * 60.0
MAX_SECONDS = 12 * 3600.0
MAX_GRANTS = 4096
"""The most grants kept; minting one more drops the oldest."""
PREFIX = "/tb/"
"""The grants' paths: the console's guard asks them for no session (the
grant is one), the proxy serves them (:mod:`~.tensorboard_proxy`)."""


@dataclass
class Grant:
    """One person's access to one TensorBoard: their client, the Service
    proxy's path of that TensorBoard (ending in ``/proxy/``), whether their
    session still lives, and the TensorBoard's pod (namespace, name)."""

    kube: kube.KubeClient = field(repr=False)
    base: str
    alive: Callable[[], bool] = field(repr=False)
    pod: tuple[str, str] = ("", "")
    minted: float = 0.0
    used: float = 0.0


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Grants:
    """The grants minted and not yet expired; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._grants: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Grants({len(self._grants)})"

    def mint(
        self,
        client: kube.KubeClient,
        base: str,
        alive: Callable[[], bool],
        pod: tuple[str, str] = ("", ""),
    ) -> str:
        """A new grant's token (the dead ones swept first)."""
        self.sweep()
        token = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            while len(self._grants) >= MAX_GRANTS:
                self._grants.pop(next(iter(self._grants)))
            self._grants[_digest(token)] = Grant(client, base, alive, pod, now, now)
        return token

    def __len__(self) -> int:
        return len(self._grants)

    def sweep(self) -> None:
        """Drop the grants that expired or whose session ended, unasked: a
        grant holds its person's client, so their token goes with it."""
        now = self._clock()
        with self._lock:
            grants = list(self._grants.items())
        dead = [key for key, grant in grants if not self._live(grant, now)]
        with self._lock:
            for key in dead:
                self._grants.pop(key, None)

    @staticmethod
    def _live(grant: Grant, now: float) -> bool:
        fresh = now - grant.used <= IDLE_SECONDS and now - grant.minted <= MAX_SECONDS
        return fresh and grant.alive()

    def get(self, token: str) -> Grant | None:
        """The live grant of ``token`` (its use noted), else ``None``; an
        expired one, or one whose session ended, is dropped."""
        key, now = _digest(token), self._clock()
        with self._lock:
            grant = self._grants.get(key)
        if grant is None:
            return None
        if not self._live(grant, now):
            with self._lock:
                self._grants.pop(key, None)
            return None
        grant.used = now
        return grant


GRANTS = Grants()
