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

import httpx2
import pytest

from t9k_operator.kube import KubeClient
from tests.integration.cluster import Cluster
from tests.integration.console_people import JOB, as_, cookie, refused_their_job, sign_in, two_teams
from tests.integration.console_process import T9K, printing

pytestmark = pytest.mark.usefixtures("crds_installed")

LISTENING = re.compile(r"(http://127\.0\.0\.1:\d+)/signin")


@pytest.fixture
def teams(cluster: Cluster, admin: KubeClient) -> Iterator[dict[str, tuple[str, str]]]:
    with two_teams(cluster, admin, "t-cic") as made:
        yield made


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


def test_each_person_sees_and_reads_what_their_token_may(
    console: tuple[str, Path], teams: dict[str, tuple[str, str]]
) -> None:
    base, out = console
    (a, alice), (b, bob) = teams["alice"], teams["bob"]
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        assert client.get("/api/jobs").status_code == 401
        assert client.get("/").headers["location"] == "/signin"
        refused = sign_in(client, "not-a-token-the-api-server-knows")
        assert refused.status_code == 401 and "did not accept" in refused.text

        signed_in = sign_in(client, alice)
        assert signed_in.status_code == 303, signed_in.text
        session = cookie(signed_in, "t9k_console_session")
        rows = as_(client, session, "/api/jobs").json()["rows"]
        assert [r["key"] for r in rows] == [f"{a}/{JOB}/alice-job"]
        assert as_(client, session, f"/api/jobs/{a}/{JOB}/alice-job").status_code == 200

        reason = refused_their_job(
            client, session, f"system:serviceaccount:{a}:alice", b, "bob-job"
        )
        page = as_(client, session, f"/jobs/{b}/{JOB}/bob-job")
        assert page.status_code == 403 and "forbidden" in page.text

        bobs = cookie(sign_in(client, bob), "t9k_console_session")
        assert [r["key"] for r in as_(client, bobs, "/api/jobs").json()["rows"]] == [
            f"{b}/{JOB}/bob-job"
        ]

        csrf = re.search(r'name="csrf-token" content="([^"]+)"', as_(client, session, "/").text)
        assert csrf
        out_ = client.post(
            "/api/logout",
            headers={"Cookie": f"t9k_console_session={session}", "X-CSRF-Token": csrf.group(1)},
        )
        assert out_.status_code == 204
        assert as_(client, session, "/api/jobs").status_code == 401
        for response in (signed_in, page):
            text = response.text + json.dumps(dict(response.headers))
            assert alice not in text and bob not in text
        assert alice not in reason
    log = out.read_text()
    assert "console sign-in" in log and f"system:serviceaccount:{a}:alice" in log
    assert alice not in log and bob not in log, "a token in the console's log"
