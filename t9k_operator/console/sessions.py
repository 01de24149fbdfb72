"""Who may use the console: a one-time token, then a session and its CSRF token.

``t9k console`` prints (and opens) a URL carrying :attr:`Sessions.token`, a
random secret. The first request that carries it exchanges it for a
:class:`Session`: a random session id (the browser keeps it in an HttpOnly
cookie) and a CSRF token (the page sends it back in a header on every
request that changes something). The token is then spent: a second
exchange, or one with any other value, gets nothing. Secrets are compared in
constant time and never logged, nor kept in a ``repr``.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field

TOKEN_BYTES = 32


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


@dataclass(frozen=True)
class Session:
    """A browser's session: its id (the cookie's value) and its CSRF token."""

    id: str = field(repr=False)
    csrf_token: str = field(repr=False)

    def csrf_ok(self, given: str | None) -> bool:
        """``given`` is this session's CSRF token."""
        return given is not None and _same(given, self.csrf_token)


class Sessions:
    """The console's one-time token and the sessions it was exchanged for; thread-safe."""

    def __init__(self, token: str | None = None) -> None:
        self._token = token or secrets.token_urlsafe(TOKEN_BYTES)
        self._spent = False
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Sessions(spent={self._spent}, sessions={len(self._sessions)})"

    @property
    def token(self) -> str:
        """The one-time token, for the URL ``t9k console`` prints."""
        return self._token

    @property
    def spent(self) -> bool:
        return self._spent

    def exchange(self, token: str) -> Session | None:
        """A new session for the token, the first time it is given; else ``None``."""
        with self._lock:
            if self._spent or not _same(token, self._token):
                return None
            self._spent = True
            session = Session(
                secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES)
            )
            self._sessions[session.id] = session
            return session

    def get(self, session_id: str | None) -> Session | None:
        """The session of that id, if there is one."""
        if not session_id:
            return None
        with self._lock:
            for known, session in self._sessions.items():
                if _same(session_id, known):
                    return session
        return None

    def end(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)
