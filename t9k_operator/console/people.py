"""The in-cluster console's people: each signed-in person's session and what
it holds, their :class:`Workspace`.

A workspace is one person's console: a client whose every request carries
their token (:func:`~.identity.person_client`), a :class:`~.board.JobBoard`
fed by informers of their own (:func:`~.watch.watch_namespaces`, run with that
client: Kubernetes RBAC decides which jobs they see), and the console's app
over that board (:func:`~.app.create_app`, its routes acting with that
client). :class:`PersonSessions` keeps the workspaces by session; it is a
:class:`~.sessions.Sessions` with no one-time token, so the app's own guard
checks the session and its CSRF token as in the local console, and its sign
out ends the session here. Ending a session (sign out, expiry, the console
stopping) closes the workspace: its streams end, its informers stop, and the
token, held by nothing else, is dropped.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog
from starlette.types import ASGIApp

from t9k_operator import kube
from t9k_operator.console.board import JobBoard
from t9k_operator.console.identity import Person
from t9k_operator.console.sessions import TOKEN_BYTES, Session, Sessions
from t9k_operator.console.watch import Watches, watch_namespaces
from t9k_operator.sdk import Client

log = structlog.get_logger(__name__)

SYNC_SECONDS = 10.0


@dataclass(eq=False)
class Workspace:
    """One person's console: their client, board, informers and app."""

    person: Person
    kube: kube.KubeClient = field(repr=False)
    board: JobBoard = field(default_factory=JobBoard, repr=False)
    watches: Watches = field(default_factory=Watches, repr=False)
    kinds: list[str] = field(default_factory=list)
    app: ASGIApp | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _closed: bool = False

    @property
    def reads(self) -> Client:
        """The SDK's client over the person's client (the Job page's Events, logs)."""
        return Client(namespace=self.person.home_namespace or "default", kube_client=self.kube)

    def watch(self, namespaces: Sequence[str], sync_seconds: float = SYNC_SECONDS) -> bool:
        """Watch the jobs and pods the person may list in ``namespaces`` (all
        namespaces, when they may), beyond those watched already; ``False``
        when some informer did not list within ``sync_seconds``."""
        with self._lock:
            if self._closed:
                return False
            more = watch_namespaces(self.kube, self.board, namespaces, self.watches)
            self.watches.add(more)
            self.kinds.extend(k for k in more.scopes if k not in self.kinds)
            more.start()
        return more.wait_for_sync(sync_seconds)

    def close(self) -> None:
        """End the person's streams, stop their informers, drop their client."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.board.close()
        self.watches.stop()
        self.kube.close()


@dataclass(eq=False)
class _Entry:
    session: Session
    workspace: Workspace
    expires: float


class PersonSessions(Sessions):
    """The signed-in people's sessions and workspaces; thread-safe. A session
    ends at sign out, or at ``expires`` given to :meth:`start`."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock
        self._people: dict[str, _Entry] = {}

    def __repr__(self) -> str:
        return f"PersonSessions(sessions={len(self._people)})"

    def exchange(self, token: str) -> Session | None:
        """No one-time token here: people sign in (:mod:`~.signin`)."""
        return None

    def start(self, workspace: Workspace, expires: float) -> Session:
        session = Session(secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES))
        with self._lock:
            self._people[session.id] = _Entry(session, workspace, expires)
        return session

    def get(self, session_id: str | None) -> Session | None:
        entry = self._entry(session_id)
        return entry.session if entry else None

    def workspace(self, session_id: str | None) -> tuple[Session, Workspace] | None:
        """The live session of that id and its workspace."""
        entry = self._entry(session_id)
        return (entry.session, entry.workspace) if entry else None

    def end(self, session: Session) -> None:
        with self._lock:
            entry = self._people.pop(session.id, None)
        if entry is not None:
            _close_later(entry.workspace)
            log.info("console session ended", user=entry.workspace.person.username)

    def sweep(self) -> int:
        """End every expired session; how many ended."""
        now = self._clock()
        with self._lock:
            expired = [e for e in self._people.values() if e.expires <= now]
            for entry in expired:
                self._people.pop(entry.session.id, None)
        for entry in expired:
            _close_later(entry.workspace)
            log.info("console session expired", user=entry.workspace.person.username)
        return len(expired)

    def close(self) -> None:
        """End every session (the console stops)."""
        with self._lock:
            entries = list(self._people.values())
            self._people.clear()
        for entry in entries:
            entry.workspace.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._people)

    def _entry(self, session_id: str | None) -> _Entry | None:
        if not session_id:
            return None
        self.sweep()
        with self._lock:
            for known, entry in self._people.items():
                if secrets.compare_digest(session_id.encode(), known.encode()):
                    return entry
        return None


def _close_later(workspace: Workspace) -> None:
    """Close ``workspace`` in a thread of its own: stopping its informers takes
    a moment, and the request (or sweep) that ended it need not wait."""
    threading.Thread(target=workspace.close, daemon=True, name="console-close").start()
