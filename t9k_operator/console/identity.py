"""Who a bearer token belongs to, and a client that acts as that person.

The in-cluster console (:mod:`~.signin`) holds no rights of its own: each
person signs in with a token of theirs (a ServiceAccount token, an OIDC ID
token the API server accepts), and every request made for them carries it.
:func:`who_is` asks the API server itself, with that token, whom it
authenticates (a SelfSubjectReview, ``authentication.k8s.io/v1``; where the
server has none, a SelfSubjectAccessReview, which any authenticated user may
create, proves the token good without naming anyone). The token is kept in
the client's closure only: never in a ``repr``, a log record or an error.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from t9k_operator import kube

SELF_SUBJECT_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SELF_SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
OPTIONS = kube.ClientOptions(qps=20, burst=40, user_agent="t9k-console")


@dataclass(frozen=True)
class Person:
    """Whom the API server says a token is: its username (empty when the
    server could not say) and groups."""

    username: str
    groups: tuple[str, ...] = ()

    @property
    def home_namespace(self) -> str | None:
        """A ServiceAccount's namespace (``system:serviceaccount:<ns>:<name>``)."""
        if not self.username.startswith(SERVICE_ACCOUNT_PREFIX):
            return None
        namespace, _, _ = self.username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
        return namespace or None


class PersonClient(kube.KubeClient):
    """A client whose every request carries one person's token; the first
    time the API server no longer accepts it (401: revoked, expired), it
    calls :attr:`on_refused` (the console ends the person's session)."""

    on_refused: Callable[[], None] | None = None

    def _open(self, *args: Any, **kwargs: Any) -> urllib3.BaseHTTPResponse:
        try:
            return super()._open(*args, **kwargs)
        except kube.Unauthorized:
            refused, self.on_refused = self.on_refused, None
            if refused is not None:
                refused()
            raise


def person_client(server: str, ca_file: str | None, token: str) -> PersonClient:
    """A client of the API server at ``server`` (trusting ``ca_file``) whose
    every request carries ``token``."""
    header = f"Bearer {token}"
    connection = kube.Connection(host=server, ca_file=ca_file, authorization=lambda: header)
    return PersonClient(connection, OPTIONS)


def who_is(client: kube.KubeClient) -> Person:
    """Whom the API server authenticates ``client``'s token as;
    :class:`~t9k_operator.kube.Unauthorized` when it does not."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        review = client.request("POST", SELF_SUBJECT_REVIEWS, body=body)
    except (kube.NotFound, kube.Forbidden):
        return _authenticated(client)
    info = (review.get("status") or {}).get("userInfo") or {}
    return Person(str(info.get("username") or ""), tuple(info.get("groups") or ()))


def _authenticated(client: kube.KubeClient) -> Person:
    """A person of unknown name, once a SelfSubjectAccessReview shows the
    token authenticates (any authenticated user may create one)."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "namespaces"}},
    }
    client.request("POST", SELF_SUBJECT_ACCESS_REVIEWS, body=body)
    return Person("")


def token_expiry(token: str) -> float | None:
    """A JWT's ``exp`` (seconds since the epoch), read, not verified: it can
    only shorten a session; ``None`` for a token that is not a JWT or has none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        exp = float(payload["exp"])
    except (ValueError, KeyError, TypeError):
        return None
    return exp if exp > 0 else None


def seconds_left(token: str, now: float | None = None) -> float | None:
    exp = token_expiry(token)
    return None if exp is None else exp - (time.time() if now is None else now)
