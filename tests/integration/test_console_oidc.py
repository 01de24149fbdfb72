"""``t9k console --in-cluster`` with an OIDC ID token, against a cluster of
this module's own whose kube-apiserver accepts them: its structured
authentication configuration (``--authentication-config``) has a ``jwt``
authenticator for the issuer of :mod:`tests.integration.oidc_issuer`, its
usernames the token's ``email`` claim prefixed ``oidc:``.

That issuer is a stand-in for an identity provider's two documents (its
discovery document and key set) and its signature on the tokens; the API
server's own JWT authenticator is what validates each token (signature,
issuer, audience, expiry). It fetches the documents in the background and
retries until it has them, refusing every token meanwhile, so the issuer
starts before the API server and the test waits until a good token is
accepted. RBAC binds the user ``oidc:carol@example.com`` in namespace a only
(alice's Role); bob's namespace b has a job too.

The console (:func:`tests.integration.test_console_in_cluster.console`,
started by its fixture against this module's ``cluster``) shows carol her
job in a and refuses her b's with the API server's reason; an expired token,
or one signed by another key, opens nothing; its output holds no token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from t9k_operator.console.identity import person_client, who_is
from t9k_operator.kube import KubeClient, Unauthorized
from tests.integration import test_console_in_cluster
from tests.integration.cluster import ROOT, Cluster, env_flag, session_cluster_name, wait_for
from tests.integration.cluster import admin as admin_client
from tests.integration.console_people import (
    JOB,
    SESSION,
    as_,
    cookie,
    pause,
    refused_their_job,
    sign_in,
    two_teams,
)
from tests.integration.oidc_issuer import Issuer, forged_id_token

AUDIENCE = "t9k-console"
EMAIL = "carol@example.com"
USER = f"oidc:{EMAIL}"

console = test_console_in_cluster.console
"""The in-cluster console's fixture, here against this module's ``cluster``."""


def authentication_config(issuer: Issuer) -> str:
    """kube-apiserver's AuthenticationConfiguration (JSON is YAML) trusting ``issuer``."""
    jwt = {
        "issuer": {
            "url": issuer.url,
            "audiences": [AUDIENCE],
            "certificateAuthority": issuer.ca_pem,
        },
        "claimMappings": {"username": {"claim": "email", "prefix": "oidc:"}},
    }
    kind = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration"}
    return json.dumps({**kind, "jwt": [jwt]}, indent=2)


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    serving = Issuer(AUDIENCE)
    yield serving
    serving.close()


@pytest.fixture(scope="module")
def cluster(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster of its own whose kube-apiserver trusts ``issuer``'s ID tokens,
    with the project's CRDs."""
    config = tmp_path_factory.mktemp("oidc") / "authentication.json"
    config.write_text(authentication_config(issuer))
    flags = [f"--authentication-config={config}"]
    try:
        handle = Cluster.start(f"{session_cluster_name()}-idp", flags)
    except RuntimeError as exc:
        pytest.fail(f"the OIDC cluster could not be started: {exc}", pytrace=False)
    try:
        crds = str(ROOT / "manifests" / "crds")
        handle.kubectl("apply", "--server-side", "--force-conflicts", "-f", crds)
        handle.wait_established("crd", "-l", "app.kubernetes.io/part-of=t9k-operator")
        yield handle
    finally:
        if not env_flag("T9K_KEEP_CLUSTER"):
            handle.stop()


@pytest.fixture(scope="module")
def admin(cluster: Cluster) -> KubeClient:
    return admin_client(cluster)


@pytest.fixture(scope="module")
def teams(cluster: Cluster, admin: KubeClient) -> Iterator[dict[str, tuple[str, str]]]:
    """alice's and bob's (tests.integration.console_people), and carol bound
    to alice's Role in a."""
    with two_teams(cluster, admin, "t-oidc") as made:
        a = made["alice"][0]
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "carol", "namespace": a},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "alice"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        }
        cluster.kubectl("apply", "-f", "-", input_=json.dumps(binding))
        yield made


@pytest.fixture(scope="module")
def id_token(cluster: Cluster, issuer: Issuer) -> str:
    """carol's ID token, once the API server's authenticator has the issuer's keys."""
    token = issuer.id_token(EMAIL)

    def accepted() -> bool:
        client = person_client(cluster.server, str(cluster.ca_file), token)
        try:
            return who_is(client).username == USER
        except Unauthorized:
            return False
        finally:
            client.close()

    wait_for(accepted, 60, "the API server to accept the OIDC ID token", interval=0.5)
    return token


def _records(log: str) -> list[dict[str, object]]:
    """The console's log records (its JSON lines)."""
    return [json.loads(line) for line in log.splitlines() if line.startswith("{")]


def test_an_oidc_user_sees_and_acts_on_what_rbac_gives_their_id_token(
    console: tuple[str, Path], teams: dict[str, tuple[str, str]], id_token: str
) -> None:
    base, out = console
    a, b = teams["alice"][0], teams["bob"][0]
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        signed_in = sign_in(client, id_token, a)  # no ServiceAccount namespace of hers
        assert signed_in.status_code == 303, signed_in.text
        session = cookie(signed_in, SESSION)
        set_session = [
            h for h in signed_in.headers.get_list("set-cookie") if h.startswith(f"{SESSION}=")
        ]
        age = re.search(r"Max-Age=(\d+)", set_session[0], re.IGNORECASE)
        assert age and 3500 < int(age.group(1)) <= 3600, (
            "the session not ended by the ID token's exp"
        )
        rows = as_(client, session, "/api/jobs").json()["rows"]
        assert [r["key"] for r in rows] == [f"{a}/{JOB}/alice-job"]
        assert as_(client, session, f"/api/jobs/{a}/{JOB}/alice-job").status_code == 200

        reason = refused_their_job(client, session, USER, b, "bob-job")
        paused = pause(client, session, b, "bob-job")
        assert paused.status_code == 403, paused.text
        assert f'User "{USER}" cannot' in paused.json()["error"], paused.text
        assert [r["key"] for r in as_(client, session, "/api/jobs").json()["rows"]] == [
            f"{a}/{JOB}/alice-job"
        ]
        for response in (signed_in, paused):
            assert id_token not in response.text + json.dumps(dict(response.headers))
        assert id_token not in reason
    log = out.read_text()
    signed = [r for r in _records(log) if r.get("event") == "console sign-in"]
    assert [r.get("user") for r in signed] == [USER], log
    assert id_token not in log, "the ID token in the console's log"


def test_an_expired_or_forged_id_token_opens_nothing(
    console: tuple[str, Path], cluster: Cluster, issuer: Issuer, id_token: str
) -> None:
    base, out = console
    expired, forged = issuer.id_token(EMAIL, seconds=-3600), forged_id_token(issuer, EMAIL)
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        for token in (expired, forged):
            direct = person_client(cluster.server, str(cluster.ca_file), token)
            with pytest.raises(Unauthorized):  # the API server's own verdict
                who_is(direct)
            direct.close()
            refused = sign_in(client, token)
            assert refused.status_code == 401, refused.text
            assert "The API server did not accept this token." in refused.text
            assert not any(
                h.startswith("t9k_console_session=") for h in refused.headers.get_list("set-cookie")
            )
    log = out.read_text()
    assert "console sign-in refused" in log
    assert expired not in log and forged not in log, "an ID token in the console's log"
