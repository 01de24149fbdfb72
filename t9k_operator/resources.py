"""Resource descriptors: where a kind lives on the REST API.

A :class:`Resource` knows its group, version and plural, and builds request
paths. Pure data beside :mod:`t9k_operator.objects`, so the pure layers (the
engine, the kinds, the integrations) name resources without importing the
client. It holds no kind-specific behaviour; the job kinds declare their own
descriptors elsewhere with the same class.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
TOKENREVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
# Kueue's Workload, read by more than one integration (Kueue's; the start
# estimate, which reads a waiting job's place in its queue).
# kueue.x-k8s.io/v1beta2: Kueue's storage version since v0.16 (integrations/kueue/build.py).
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
