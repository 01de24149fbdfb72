"""``t9k console --in-cluster`` against the local cluster's API server, run as
a local process that knows only the server's address and CA (no kubeconfig,
no rights of its own). Two real ServiceAccounts sign in with their own
tokens: ``alice``, with a Role in namespace a, sees a's job only, and her
request for b's job is refused with the API server's own reason; ``bob``
sees b's only; a token the API server does not accept opens nothing. The
console's output holds neither token.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.resources import NAMESPACES
from tests.integration.cluster import Cluster, create_namespace, delete_quietly, request_token
from tests.integration.console_process import T9K, printing
from tests.integration.jobs import Jobs, pytorch_job

pytestmark = pytest.mark.usefixtures("crds_installed")

LISTENING = re.compile(r"(http://127\.0\.0\.1:\d+)/signin")
JOB = "PyTorchTrainingJob"


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


@pytest.fixture
def two_teams(cluster: Cluster, admin: KubeClient) -> Iterator[dict[str, tuple[str, str]]]:
    """alice in namespace a and bob in b, a job in each: name -> (namespace, token)."""
    teams: dict[str, tuple[str, str]] = {}
    try:
        for person, prefix in (("alice", "t-cic-a"), ("bob", "t-cic-b")):
            namespace = create_namespace(admin, prefix)
            teams[person] = (namespace, "")
            cluster.kubectl("apply", "-f", "-", input_=_person(person, namespace))
            Jobs(admin, namespace).create(pytorch_job(f"{person}-job", [("worker", 1, "Never")]))
            teams[person] = (namespace, request_token(admin, namespace, person, 3600))
        yield teams
    finally:
        for namespace, _ in teams.values():
            delete_quietly(admin, NAMESPACES, namespace, None)


@pytest.fixture
def console(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The in-cluster console's base URL, and the file of its whole output."""
    out = tmp_path / "console.out"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either
    command = [str(T9K), "console", "--in-cluster", "--address", "127.0.0.1", "--port", "0"]
    command += ["--api-server", cluster.server, "--ca-file", str(cluster.ca_file)]
    with printing(command, out, LISTENING, seconds=30, env=env) as match:
        yield match.group(1), out


def _cookie(response: httpx2.Response, name: str) -> str:
    """The value of the cookie ``name`` the response sets (sent back by hand:
    a client keeps a Secure cookie for https only, and this is plain http)."""
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{name}="):
            assert all(f in header for f in ("HttpOnly", "Secure", "SameSite=strict")), header
            return header.split(";", 1)[0].split("=", 1)[1]
    raise AssertionError(f"no {name} cookie set")


def _sign_in(client: httpx2.Client, token: str) -> httpx2.Response:
    form = client.get("/signin")
    match = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert form.status_code == 200 and match
    nonce = _cookie(form, "t9k_console_signin")
    return client.post(
        "/signin",
        data={"csrf": match.group(1), "token": token, "namespaces": ""},
        headers={"Cookie": f"t9k_console_signin={nonce}"},
    )


def _as(client: httpx2.Client, session: str, path: str, **kw: Any) -> httpx2.Response:
    return client.get(path, headers={"Cookie": f"t9k_console_session={session}"}, **kw)


def test_each_person_sees_and_reads_what_their_token_may(
    console: tuple[str, Path], two_teams: dict[str, tuple[str, str]]
) -> None:
    base, out = console
    (a, alice), (b, bob) = two_teams["alice"], two_teams["bob"]
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        assert client.get("/api/jobs").status_code == 401
        assert client.get("/").headers["location"] == "/signin"
        refused = _sign_in(client, "not-a-token-the-api-server-knows")
        assert refused.status_code == 401 and "did not accept" in refused.text

        signed_in = _sign_in(client, alice)
        assert signed_in.status_code == 303, signed_in.text
        session = _cookie(signed_in, "t9k_console_session")
        rows = _as(client, session, "/api/jobs").json()["rows"]
        assert [r["key"] for r in rows] == [f"{a}/{JOB}/alice-job"]
        assert _as(client, session, f"/api/jobs/{a}/{JOB}/alice-job").status_code == 200

        theirs = _as(client, session, f"/api/jobs/{b}/{JOB}/bob-job")
        assert theirs.status_code == 403
        reason = theirs.json()["error"]
        assert f'"system:serviceaccount:{a}:alice" cannot get resource' in reason, reason
        assert f'in the namespace "{b}"' in reason, reason
        page = _as(client, session, f"/jobs/{b}/{JOB}/bob-job")
        assert page.status_code == 403 and "forbidden" in page.text

        bobs = _cookie(_sign_in(client, bob), "t9k_console_session")
        assert [r["key"] for r in _as(client, bobs, "/api/jobs").json()["rows"]] == [
            f"{b}/{JOB}/bob-job"
        ]

        csrf = re.search(r'name="csrf-token" content="([^"]+)"', _as(client, session, "/").text)
        assert csrf
        out_ = client.post(
            "/api/logout",
            headers={"Cookie": f"t9k_console_session={session}", "X-CSRF-Token": csrf.group(1)},
        )
        assert out_.status_code == 204
        assert _as(client, session, "/api/jobs").status_code == 401
        for response in (signed_in, theirs, page):
            text = response.text + json.dumps(dict(response.headers))
            assert alice not in text and bob not in text
    log = out.read_text()
    assert "console sign-in" in log and f"system:serviceaccount:{a}:alice" in log
    assert alice not in log and bob not in log, "a token in the console's log"
