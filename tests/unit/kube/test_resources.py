"""Request paths built by Resource descriptors."""

from __future__ import annotations

import pytest

from t9k_operator.resources import CRDS, LEASES, NODES, PODS, Resource


@pytest.mark.parametrize(
    ("resource", "ns", "name", "sub", "path"),
    [
        (PODS, None, None, None, "/api/v1/pods"),
        (PODS, "ns", None, None, "/api/v1/namespaces/ns/pods"),
        (PODS, "ns", "p", None, "/api/v1/namespaces/ns/pods/p"),
        (PODS, "ns", "p", "status", "/api/v1/namespaces/ns/pods/p/status"),
        (LEASES, "kube", "l", None, "/apis/coordination.k8s.io/v1/namespaces/kube/leases/l"),
        (NODES, "ignored", "n", None, "/api/v1/nodes/n"),
        (CRDS, None, "a.b", None, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.b"),
    ],
)
def test_paths(
    resource: Resource, ns: str | None, name: str | None, sub: str | None, path: str
) -> None:
    assert resource.path(ns, name, sub) == path


def test_api_version_and_quoting() -> None:
    assert PODS.api_version == "v1"
    assert LEASES.api_version == "coordination.k8s.io/v1"
    assert PODS.path("ns", "a/b") == "/api/v1/namespaces/ns/pods/a%2Fb"
