"""PEM data handed to TLS as files: a kubeconfig's ``*-data`` fields (and an
exec plugin's client certificate) are base64 or PEM text, while the TLS layer
reads files. Each is written once to a file only this user can read, removed
when the process exits."""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile

_written: list[str] = []


def _remove_all() -> None:
    for path in _written:
        with contextlib.suppress(OSError):
            os.unlink(path)


atexit.register(_remove_all)


def write(data: bytes, suffix: str) -> str:
    """The path of a new file (mode 0600) holding ``data``."""
    fd, path = tempfile.mkstemp(prefix="t9k-kube-", suffix=suffix)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    _written.append(path)
    return path
