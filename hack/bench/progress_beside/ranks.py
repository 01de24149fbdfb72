"""The reporting ranks: each pod's token for the endpoint, and its ranks as
the reporters' process takes them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from t9k_operator.kube import KubeClient
from t9k_operator.resources import SERVICEACCOUNTS

from ..common.jobs import NAMESPACE

AUDIENCE = "t9k-operator-progress"  # the operator's default --progress-audience
RANKS = 8  # processes a pod


def tokens(client: KubeClient, pods: list[dict[str, Any]]) -> dict[str, str]:
    """Each pod's token for the endpoint's audience, bound to it (TokenRequest
    of its ServiceAccount, as kubelet asks for a projected token)."""

    def one(pod: dict[str, Any]) -> tuple[str, str]:
        meta = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        spec = {
            "audiences": [AUDIENCE],
            "expirationSeconds": 3600,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = client.request("POST", SERVICEACCOUNTS.path(NAMESPACE, sa, "token"), body=body)
        return meta["name"], str(answer["status"]["token"])

    with ThreadPoolExecutor(16) as pool:
        return dict(pool.map(one, pods))


def rank_specs(pods: list[dict[str, Any]], given: dict[str, str], ramp: float) -> list[Any]:
    """The reporters' ranks: each pod's 8, to the URL in its environment."""
    out = []
    for i, pod in enumerate(pods):
        env = {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}
        path = urlsplit(env["T9K_PROGRESS_URL"]).path
        for r in range(RANKS):
            out.append(
                {
                    "path": path,
                    "token": given[pod["metadata"]["name"]],
                    "rank": r,
                    "paced": True,
                    "group": "all",
                    "delay": ramp * ((i * RANKS + r) % 997) / 997,
                }
            )
    return out
