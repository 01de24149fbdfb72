"""The progress endpoint's refusals, on the real API server: each kind of bad
token a report can come with (the pod's default one, an expired one, one not
bound to a pod, a pod's of another namespace, a replaced pod's) is refused,
and counted by its reason (docs/progress.md, "The endpoint"). The operator
and the job's pods run as in test_progress.py, whose fixtures these are."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from t9k_operator.kube import KubeClient
from t9k_operator.resources import NAMESPACES, PODS, SERVICEACCOUNTS
from tests.integration import test_progress
from tests.integration.cluster import Cluster, create_namespace, delete_quietly
from tests.integration.jobs import Jobs
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.integration.podhost import Node
from tests.integration.test_progress import counted, env_of, job_body, post, start

# The operator with its endpoint, its port, and the pod host: test_progress.py's.
progress_operator = test_progress.progress_operator
port = test_progress.port
node = test_progress.node


AUDIENCE = "t9k-operator-progress"
DEFAULT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def token_request(
    client: KubeClient, namespace: str, audience: str | None, pod: dict[str, Any] | None
) -> str:
    """A token of the namespace's default ServiceAccount (10 minutes, the least
    the API server gives), for ``audience`` and bound to ``pod`` when given."""
    spec: dict[str, Any] = {"expirationSeconds": 600}
    if audience:
        spec["audiences"] = [audience]
    if pod is not None:
        meta = pod["metadata"]
        spec["boundObjectRef"] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "uid": meta["uid"],
        }
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    answer = client.request("POST", SERVICEACCOUNTS.path(namespace, "default", "token"), body=body)
    return str(answer["status"]["token"])


def expired(token: str, signing_key: Path) -> str:
    """``token`` as the API server would have signed it 20 minutes ago, for 10
    minutes: its claims, iat/nbf/exp moved back, signed with the cluster's own
    ServiceAccount signing key. A TokenRequest of less than 10 minutes is
    invalid whatever the flags (``--service-account-max-token-expiration``
    caps only the longest), and waiting for a token to expire would hold the
    test up for more than 10; this one is what the API server's own check
    meets in a token past its time: signed by its issuer, bound to a current
    pod, only expired."""

    def decode(part: str) -> Any:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

    def encode(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header, claims, _ = token.split(".")
    payload = decode(claims)
    now = int(time.time())
    payload.update(iat=now - 1200, nbf=now - 1200, exp=now - 600)
    signed = f"{header}.{encode(json.dumps(payload).encode())}"
    key = serialization.load_pem_private_key(signing_key.read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{encode(signature)}"


def test_each_bad_token_is_refused_and_counted_by_its_reason(
    progress_operator: OperatorProcess,
    admin: KubeClient,
    kubelet: Kubelet,
    node: Node,
    namespace: str,
    cluster: Cluster,
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_body("a"))
    runs = start(jobs, kubelet, node, "a", ["a-master-0", "a-worker-0"])
    master = runs["a-master-0"]
    pods = jobs.pods("a")
    url = env_of(pods["a-master-0"])["T9K_PROGRESS_URL"]
    token_file = env_of(pods["a-master-0"])["T9K_PROGRESS_TOKEN_FILE"]
    own = master.exec("pytorch", ["cat", token_file]).stdout.strip()
    assert post(master, url, "@own") == [202]

    def refused(token: str) -> tuple[list[int], dict[str, float]]:
        """The answer to a report with ``token``, and what it added to each reason."""
        reasons = ("audience", "expired", "pod-replaced", "not-bound", "other-namespace")
        before = {r: counted(progress_operator, "unauthenticated", r) for r in reasons} | {
            f"forbidden/{r}": counted(progress_operator, "forbidden", r) for r in reasons
        }
        codes = post(master, url, token)
        after = {r: counted(progress_operator, "unauthenticated", r) for r in reasons} | {
            f"forbidden/{r}": counted(progress_operator, "forbidden", r) for r in reasons
        }
        return codes, {k: after[k] - before[k] for k in after if after[k] != before[k]}

    # The pod's default ServiceAccount token (kubelet's kube-api-access
    # volume): good for the API server, not for the endpoint.
    assert any(
        "serviceAccountToken" in str(v) and "kube-api-access" in v["name"]
        for v in pods["a-master-0"]["spec"]["volumes"]
    )
    assert refused(f"@{DEFAULT_TOKEN}") == ([401], {"audience": 1})

    # The pod's own token, expired (signed as the API server signs it).
    assert refused(expired(own, cluster.kubeconfig.parent / "pki" / "sa.key")) == (
        [401],
        {"expired": 1},
    )

    # A token for the endpoint's audience bound to no pod (a TokenRequest
    # without boundObjectRef).
    assert refused(token_request(admin, namespace, AUDIENCE, None)) == ([401], {"not-bound": 1})

    # A pod's token for the endpoint, the pod in another namespace.
    other = create_namespace(admin, "t-progress-other")
    try:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a-master-0", "namespace": other},
            "spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.4.0"}]},
        }
        elsewhere = admin.create(PODS, body, other)
        token = token_request(admin, other, AUDIENCE, elsewhere)
        assert refused(token) == ([403], {"forbidden/other-namespace": 1})
    finally:
        delete_quietly(admin, NAMESPACES, other, None)

    # The token of a replaced pod: the worker, evicted by its kubelet, is
    # recreated by the operator under the same name with another uid. Its old
    # token's review may still be remembered as good (the operator's own
    # cache, or the API server's for a few seconds): then the operator tells
    # the pod's uid is not current (403); else the API server refuses the
    # token as invalidated (401). Either way the reason is the pod replaced.
    worker = runs["a-worker-0"]
    worker_file = env_of(pods["a-worker-0"])["T9K_PROGRESS_TOKEN_FILE"]
    old_token = worker.exec("pytorch", ["cat", worker_file]).stdout.strip()
    # kubelet's eviction kills the pod's containers before it writes the
    # status (eviction_manager.go evictPod: killPodFunc, then the status):
    # the worker's reporter, its last paced report still waiting, dies with
    # them, so the one refusal counted below is the test's own.
    worker.stop()
    kubelet.evict(namespace, "a-worker-0")
    jobs.wait_new_pod("a", "a-worker-0", pods["a-worker-0"]["metadata"]["uid"], 30)
    codes, added = refused(old_token)
    assert (codes, added) in (
        ([401], {"pod-replaced": 1}),
        ([403], {"forbidden/pod-replaced": 1}),
    ), (codes, added)
