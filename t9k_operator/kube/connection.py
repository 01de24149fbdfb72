"""What the HTTP layer needs to reach one API server: its URL, how to trust
it, the client certificate if any, and where each request's
``Authorization`` header comes from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Connection:
    host: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    tls_server_name: str | None = None
    # Returns the Authorization header value ("Bearer ...") or None; called per
    # request so rotated tokens are picked up.
    authorization: Callable[[], str | None] = field(default=lambda: None)
    # The ``kubernetes`` package's configuration when its loaders made this
    # connection (an auth-provider kubeconfig: kube/provider_config.py); None otherwise.
    loaded: Any = None
