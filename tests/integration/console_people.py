"""People who sign in to the in-cluster console in its integration tests
(test_console_in_cluster, a local process; test_console_deployment, the
shipped Deployment): two real ServiceAccounts, ``alice`` with a Role in
namespace a and ``bob`` in b, a job in each; and signing in with their
tokens as a browser does (the form's CSRF token and nonce cookie)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx2

from t9k_operator.kube import KubeClient
from t9k_operator.resources import NAMESPACES
from tests.integration.cluster import Cluster, create_namespace, delete_quietly, request_token
from tests.integration.jobs import Jobs, pytorch_job

JOB = "PyTorchTrainingJob"
SESSION, SIGNIN = "t9k_console_session", "t9k_console_signin"


def _person(name: str, namespace: str) -> str:
    """A ServiceAccount with a Role in its namespace: jobs and pods read, jobs updated."""
    return f"""\
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {name}, namespace: {namespace}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {name}, namespace: {namespace}}}
rules:
- apiGroups: [batch.tensorstack.dev]
  resources: [pytorchtrainingjobs]
  verbs: [get, list, watch, update]
- apiGroups: [""]
  resources: [pods, pods/log, events]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {name}, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {name}}}
subjects:
- {{kind: ServiceAccount, name: {name}, namespace: {namespace}}}
"""


@contextlib.contextmanager
def two_teams(
    cluster: Cluster, admin: KubeClient, prefix: str
) -> Iterator[dict[str, tuple[str, str]]]:
    """alice in a namespace ``<prefix>-a-…`` and bob in ``<prefix>-b-…``, the
    job ``<name>-job`` in each: name -> (namespace, token); the namespaces
    deleted on leaving."""
    teams: dict[str, tuple[str, str]] = {}
    try:
        for person, letter in (("alice", "a"), ("bob", "b")):
            namespace = create_namespace(admin, f"{prefix}-{letter}")
            teams[person] = (namespace, "")
            cluster.kubectl("apply", "-f", "-", input_=_person(person, namespace))
            Jobs(admin, namespace).create(pytorch_job(f"{person}-job", [("worker", 1, "Never")]))
            teams[person] = (namespace, request_token(admin, namespace, person, 3600))
        yield teams
    finally:
        for namespace, _ in teams.values():
            delete_quietly(admin, NAMESPACES, namespace, None)


def cookie(response: httpx2.Response, name: str) -> str:
    """The value of the cookie ``name`` the response sets, which must be
    HttpOnly, Secure and SameSite=Strict (sent back by hand: a client keeps
    a Secure cookie for https only, and these consoles are reached over
    plain http, as a browser reaches one at localhost)."""
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{name}="):
            assert all(f in header for f in ("HttpOnly", "Secure", "SameSite=strict")), header
            return header.split(";", 1)[0].split("=", 1)[1]
    raise AssertionError(f"no {name} cookie set")


def sign_in(client: httpx2.Client, token: str, namespaces: str = "") -> httpx2.Response:
    """The sign-in form fetched, then posted with ``token`` and ``namespaces``
    (none: a ServiceAccount's own is watched)."""
    form = client.get("/signin")
    match = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert form.status_code == 200 and match
    nonce = cookie(form, SIGNIN)
    return client.post(
        "/signin",
        data={"csrf": match.group(1), "token": token, "namespaces": namespaces},
        headers={"Cookie": f"{SIGNIN}={nonce}"},
    )


def as_(client: httpx2.Client, session: str, path: str, **kw: Any) -> httpx2.Response:
    """A GET of ``path`` in the session ``session``."""
    return client.get(path, headers={"Cookie": f"{SESSION}={session}"}, **kw)


def refused_their_job(
    client: httpx2.Client, session: str, user: str, namespace: str, name: str
) -> str:
    """The API server's reason, which the console passes on, for ``user``'s
    read of job ``name`` in ``namespace``, which their RBAC does not cover."""
    theirs = as_(client, session, f"/api/jobs/{namespace}/{JOB}/{name}")
    assert theirs.status_code == 403, theirs.text
    reason = str(theirs.json()["error"])
    assert f'"{user}" cannot get resource' in reason, reason
    assert f'in the namespace "{namespace}"' in reason, reason
    return reason


def pause(client: httpx2.Client, session: str, namespace: str, name: str) -> httpx2.Response:
    """The Pause button's request for job ``name``, with the page's CSRF token."""
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', as_(client, session, "/").text)
    assert csrf
    return client.post(
        f"/api/jobs/{namespace}/{JOB}/{name}/pause",
        headers={"Cookie": f"{SESSION}={session}", "X-CSRF-Token": csrf.group(1)},
    )
