"""Where a request's ``Authorization`` header comes from: a fixed token, a
user name and password, or a token file that is read again whenever it
changes (kubelet rotates a service account's projected token in place by
swapping a symlink; a kubeconfig's ``tokenFile`` may be rewritten too)."""

from __future__ import annotations

import base64
import os
import threading


def bearer(token: str) -> str:
    return f"Bearer {token}"


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class FileToken:
    """The token in ``path``, read again when the file changes (its inode,
    size or modification time as ``stat`` sees it through any symlink)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._token = ""
        self.read()  # a missing or unreadable file fails when loaded, not at the first request

    def read(self) -> str:
        st = os.stat(self.path)
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if seen != self._seen:
                with open(self.path) as f:
                    self._token = f.read().strip()
                self._seen = seen
            return self._token

    def authorization(self) -> str | None:
        try:
            token = self.read()
        except OSError:
            # Mid-rotation or gone: the last token read, which the server judges.
            token = self._token
        return bearer(token) if token else None
