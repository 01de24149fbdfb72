"""The cluster's ports: free ones of this machine's, chosen at its start."""

from __future__ import annotations

import socket

PORT_TRIES = 3
"""Starts of a cluster whose process found a port taken: :func:`free_port`
closes the port it found, and any connection of this machine's may take it
before the process binds it."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
