"""What a job's replicas get to report their progress: where (:class:`Settings`,
:func:`job_path`), the reporter's environment, and a volume with a projected
ServiceAccount token bound to the endpoint's audience and the endpoint's CA,
from the job's CA ConfigMap (:func:`ca_map`). Pure builders.
"""

from __future__ import annotations

from dataclasses import dataclass

from t9k_operator.builders.common import job_labels
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj

VOLUME = "t9k-progress"
MOUNT_PATH = "/var/run/secrets/t9k.dev/progress"
TOKEN_KEY = "token"
CA_KEY = "ca.crt"
TOKEN_SECONDS = 3600
"""The projected token's lifetime (kubelet renews it at 80% of it)."""
# The reporter's environment (t9k_operator/report.py reads the same names).
URL_ENV = "T9K_PROGRESS_URL"
TOKEN_FILE_ENV = "T9K_PROGRESS_TOKEN_FILE"
CA_FILE_ENV = "T9K_PROGRESS_CA_FILE"


@dataclass(frozen=True)
class Settings:
    """Where the replicas report, and how they prove who they are."""

    url: str
    """The endpoint's base address (``https://host:port``)."""
    audience: str
    """The audience the replicas' projected tokens are bound to."""
    token_seconds: int = TOKEN_SECONDS


def job_path(namespace: str, plural: str, name: str) -> str:
    """The path of the endpoint a job's replicas report to."""
    return f"/v1/namespaces/{namespace}/{plural}/{name}/progress"


def ca_map_name(job: str) -> str:
    return f"{job}-progress-ca"


def ca_map(view: JobView, ca: str, owner: Obj) -> Obj:
    """The job's ConfigMap holding the endpoint's CA (``ca.crt``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ca_map_name(view.name),
            "namespace": view.namespace,
            "labels": job_labels(owner["kind"], view.name),
            "ownerReferences": [dict(owner)],
        },
        "data": {CA_KEY: ca},
    }


def add_reporting(pod: Obj, settings: Settings, path: str, ca_map: str) -> None:
    """Give every container of ``pod`` the reporter's environment and the
    volume with its token and CA (a container that sets one of the variables
    keeps its own; a pod whose template already has a volume of that name is
    left as it is)."""
    spec = pod["spec"]
    volumes = spec.setdefault("volumes", [])
    if any(v.get("name") == VOLUME for v in volumes):
        return
    volumes.append(
        {
            "name": VOLUME,
            "projected": {
                "defaultMode": 0o444,
                "sources": [
                    {
                        "serviceAccountToken": {
                            "audience": settings.audience,
                            "expirationSeconds": settings.token_seconds,
                            "path": TOKEN_KEY,
                        }
                    },
                    {
                        "configMap": {
                            "name": ca_map,
                            "items": [{"key": CA_KEY, "path": CA_KEY}],
                            "optional": True,
                        }
                    },
                ],
            },
        }
    )
    env = {
        URL_ENV: settings.url.rstrip("/") + path,
        TOKEN_FILE_ENV: f"{MOUNT_PATH}/{TOKEN_KEY}",
        CA_FILE_ENV: f"{MOUNT_PATH}/{CA_KEY}",
    }
    for container in spec.get("containers") or []:
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("mountPath") == MOUNT_PATH for m in mounts):
            mounts.append({"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": True})
        have = {e.get("name") for e in container.get("env") or []}
        added = [{"name": k, "value": v} for k, v in env.items() if k not in have]
        if added:
            container["env"] = [*(container.get("env") or []), *added]
