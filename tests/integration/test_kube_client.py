"""The raw-JSON client against the real API server: verbs and error mapping."""

from __future__ import annotations

import time

import pytest
from prometheus_client import REGISTRY

from t9k_operator.kube import (
    AlreadyExists,
    ClientOptions,
    Conflict,
    Gone,
    Invalid,
    KubeClient,
    NotFound,
)
from t9k_operator.resources import CONFIGMAPS


def cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_create_get_patch_replace_delete(admin: KubeClient, namespace: str) -> None:
    created = admin.create(CONFIGMAPS, cm("a", k="1"), namespace)
    assert created["metadata"]["namespace"] == namespace
    assert admin.get(CONFIGMAPS, "a", namespace)["data"] == {"k": "1"}
    patched = admin.patch(CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace)
    assert patched["data"] == {"k": "2"}
    patched["data"]["k"] = "3"
    assert admin.replace(CONFIGMAPS, patched)["data"] == {"k": "3"}
    admin.delete(CONFIGMAPS, "a", namespace)
    with pytest.raises(NotFound):
        admin.get(CONFIGMAPS, "a", namespace)


def test_errors_map_to_types(admin: KubeClient, namespace: str) -> None:
    admin.create(CONFIGMAPS, cm("dup"), namespace)
    with pytest.raises(AlreadyExists) as exists:
        admin.create(CONFIGMAPS, cm("dup"), namespace)
    assert exists.value.status == 409 and exists.value.reason == "AlreadyExists"
    stale = admin.get(CONFIGMAPS, "dup", namespace)
    admin.patch(CONFIGMAPS, "dup", {"data": {"x": "y"}}, namespace)
    with pytest.raises(Conflict) as conflict:
        admin.replace(CONFIGMAPS, stale)
    assert not isinstance(conflict.value, AlreadyExists)
    with pytest.raises(Invalid) as invalid:
        admin.create(CONFIGMAPS, cm("Not_A_Valid_Name"), namespace)
    assert "Not_A_Valid_Name" in invalid.value.message
    with pytest.raises(NotFound):
        admin.delete(CONFIGMAPS, "missing", namespace)


def test_list_all_paginates(admin: KubeClient, namespace: str) -> None:
    for i in range(7):
        admin.create(CONFIGMAPS, cm(f"p{i}"), namespace)
    items, rv = admin.list_all(CONFIGMAPS, namespace, page_size=2)
    names = sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("p"))
    assert names == [f"p{i}" for i in range(7)]
    assert rv.isdigit()


def test_watch_from_compacted_revision_is_gone(admin: KubeClient, namespace: str, cluster) -> None:  # type: ignore[no-untyped-def]
    first = admin.create(CONFIGMAPS, cm("w0"), namespace)
    for i in range(3):
        admin.create(CONFIGMAPS, cm(f"w{i + 1}"), namespace)
    cluster.etcd_compact()
    with pytest.raises(Gone):
        stream = admin.watch(
            CONFIGMAPS,
            namespace,
            resource_version=first["metadata"]["resourceVersion"],
            timeout_seconds=5,
        )
        for _ in stream:
            pass


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_requests_and_limiter_waits_are_counted(admin: KubeClient, namespace: str) -> None:
    """rest_client_requests_total by status code and method, and the seconds each
    request waited for its own client's limiter, by client: what a platform team
    reads to tell a throttled operator from a slow API server."""
    agent = f"t9k-operator/test-{namespace}"
    client = KubeClient(admin.connection, ClientOptions(qps=2, burst=1, user_agent=agent))
    host = admin.connection.host.split("://", 1)[-1]
    ok, missing = (
        _sample("rest_client_requests_total", code=code, method="GET", host=host)
        for code in ("200", "404")
    )
    admin.create(CONFIGMAPS, cm("seen"), namespace)
    started = time.monotonic()
    for _ in range(3):
        client.get(CONFIGMAPS, "seen", namespace)
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "absent", namespace)
    elapsed = time.monotonic() - started
    assert _sample("rest_client_requests_total", code="200", method="GET", host=host) >= ok + 3
    assert _sample("rest_client_requests_total", code="404", method="GET", host=host) >= missing + 1
    labels = {"client": agent, "method": "GET"}
    assert _sample("t9k_client_rate_limiter_wait_seconds_count", **labels) == 4
    # One token, then one every 0.5 s: each of the three requests after the first
    # waited 0.5 s less the time the request before it took (its token was
    # accruing meanwhile), which a loaded machine keeps far under 0.5 s in all.
    waited = _sample("t9k_client_rate_limiter_wait_seconds_sum", **labels)
    assert 1.0 <= waited <= elapsed, (waited, elapsed)
    client.close()
