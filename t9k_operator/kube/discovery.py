"""Whether the API server serves a resource, from its discovery document."""

from __future__ import annotations

from t9k_operator.kube.client import KubeClient
from t9k_operator.kube.errors import ApiError
from t9k_operator.resources import Resource


def not_served(client: KubeClient, resource: Resource) -> str | None:
    """None when the cluster serves ``resource``; else why not: its group
    version's path, and the API server's error when discovery itself failed."""
    path = f"/apis/{resource.group}/{resource.version}"
    try:
        listed = client.request("GET", path)
    except ApiError as exc:
        return f"{path} ({exc})"
    if any(r.get("name") == resource.plural for r in listed.get("resources") or []):
        return None
    return path
