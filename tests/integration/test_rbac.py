"""The operator's ServiceAccount under manifests/rbac: what it needs, and no more."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest

from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.kube import AlreadyExists, Forbidden, KubeClient
from t9k_operator.resources import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    TOKENREVIEWS,
    Resource,
)
from tests.integration.jobs import PYTORCH

PROGRESS_SECRET = "t9k-operator-progress-tls"
MSJOBS = Resource("mindspore.gitee.com", "v1", "msjobs", "MSJob")

CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io",
    "v1",
    "clusterrolebindings",
    "ClusterRoleBinding",
    namespaced=False,
)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")


@pytest.mark.usefixtures("progress_secret")
def test_operator_can_do_its_work(operator_client: KubeClient, namespace: str) -> None:
    c = operator_client
    for res in (PODS, SERVICES, CONFIGMAPS, SECRETS, NODES):
        c.list_all(res)  # cluster-wide list (informers; nodes: their readiness)
        c.watch(res, resource_version=None, timeout_seconds=1).close()
    c.create(
        PODS,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        namespace,
    )
    c.delete(PODS, "p", namespace)
    c.create(
        SERVICES,
        {"metadata": {"name": "s"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
        namespace,
    )
    c.create(CONFIGMAPS, {"metadata": {"name": "h"}, "data": {"hostfile": "x"}}, namespace)
    c.replace(CONFIGMAPS, c.get(CONFIGMAPS, "h", namespace) | {"data": {"hostfile": "y"}})
    c.create(SECRETS, {"metadata": {"name": "k"}, "stringData": {"id": "x"}}, namespace)
    pod = {"metadata": {"name": "p2"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    c.create(PODS, pod, namespace)
    # With Kueue, a queued pod that is no job's (a TensorBoard's) is let go:
    # its scheduling gate taken off (the only pod it patches).
    gated = {
        "metadata": {"name": "gated"},
        "spec": {
            "schedulingGates": [{"name": "t9k.dev/kueue-admission"}],
            "containers": [{"name": "c", "image": "i"}],
        },
    }
    c.create(PODS, gated, namespace)
    c.patch(PODS, "gated", {"spec": {"schedulingGates": []}}, namespace)
    for res, name in ((PODS, "p2"), (SERVICES, "s"), (CONFIGMAPS, "h"), (SECRETS, "k")):
        c.get(res, name, namespace)  # whose is a child of this name
    ev = c.create(
        EVENTS,
        {
            "metadata": {"generateName": "e-"},
            "reason": "R",
            "message": "m",
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
        },
        namespace,
    )
    c.patch(EVENTS, ev["metadata"]["name"], {"count": 2}, namespace)
    c.create(LEASES, {"metadata": {"name": f"rbac-{namespace}"}, "spec": {}}, "t9k-system")
    # The progress endpoint: a token's review, and its certificate's Secret.
    review = {"spec": {"token": "not-a-token", "audiences": ["t9k-operator-progress"]}}
    assert not c.create(TOKENREVIEWS, review)["status"].get("authenticated")
    secret = c.get(SECRETS, PROGRESS_SECRET, "t9k-system")
    c.replace(SECRETS, secret)


@pytest.fixture
def progress_secret(admin: KubeClient) -> None:
    """The certificate's Secret, as the operator's first start leaves it."""
    body = {"metadata": {"name": PROGRESS_SECRET}, "stringData": {"tls.crt": "x"}}
    with contextlib.suppress(AlreadyExists):
        admin.create(SECRETS, body, "t9k-system")


@pytest.mark.usefixtures("crds_installed")
def test_operator_deletes_finished_msjobs_and_no_other_job(
    operator_client: KubeClient, admin: KubeClient, namespace: str
) -> None:
    """ttlSecondsAfterFinished is MSJob's (Kubeflow's run policy): the one kind
    the operator may delete."""
    body = {
        "apiVersion": "mindspore.gitee.com/v1",
        "kind": "MSJob",
        "metadata": {"name": "ttl"},
        "spec": {
            "msReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "mindspore", "image": "m"}]}},
                }
            }
        },
    }
    admin.create(MSJOBS, body, namespace)
    operator_client.delete(MSJOBS, "ttl", namespace)
    with pytest.raises(Forbidden):
        operator_client.delete(PYTORCH, "any", namespace)


@pytest.mark.usefixtures("crds_installed")
def test_operator_can_serve_tensorboards(operator_client: KubeClient, namespace: str) -> None:
    c = operator_client
    c.list_all(TENSORBOARDS)
    c.watch(TENSORBOARDS, resource_version=None, timeout_seconds=1).close()
    body = {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "metadata": {"name": "tb"},
        "spec": {"image": "tb", "trainingLogFilesets": ["t9k://pvc/logs"]},
    }
    created = c.create(TENSORBOARDS, body, namespace)
    created["spec"]["image"] = "tb:2"
    updated = c.replace(TENSORBOARDS, created)  # it follows the job's tensorboardSpec
    updated["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    c.replace_status(TENSORBOARDS, updated)
    c.get(TENSORBOARDS, "tb", namespace)  # whose is one of the job's name
    c.delete(TENSORBOARDS, "tb", namespace)  # the job's tensorboardSpec removed


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(
            lambda c, ns: c.patch(NODES, "kwok-node-0", {"spec": {"unschedulable": True}}),
            id="cordon-a-node",
        ),
        pytest.param(lambda c, ns: c.delete(NAMESPACES, ns, None), id="delete-namespace"),
        pytest.param(
            lambda c, ns: c.create(
                CLUSTER_ROLE_BINDINGS,
                {
                    "metadata": {"name": "escalate"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "name": "t9k-operator",
                            "namespace": "t9k-system",
                        }
                    ],
                },
            ),
            id="grant-itself-cluster-admin",
        ),
        pytest.param(lambda c, ns: c.list_all(DEPLOYMENTS, ns), id="list-deployments"),
        pytest.param(
            lambda c, ns: c.create(LEASES, {"metadata": {"name": "x"}, "spec": {}}, ns),
            id="lease-outside-its-namespace",
        ),
        # Garbage collection removes these with their job: the operator never does.
        pytest.param(lambda c, ns: c.delete(SECRETS, "any", ns), id="delete-secrets"),
        pytest.param(lambda c, ns: c.delete(SERVICES, "any", ns), id="delete-services"),
        pytest.param(lambda c, ns: c.delete(CONFIGMAPS, "any", ns), id="delete-configmaps"),
        pytest.param(
            lambda c, ns: c.patch(SECRETS, "any", {"metadata": {"labels": {"a": "b"}}}, ns),
            id="patch-secrets",
        ),
        # Jobs are the users': the operator writes their status only.
        pytest.param(
            lambda c, ns: c.patch(PYTORCH, "any", {"metadata": {"labels": {"a": "b"}}}, ns),
            id="patch-jobs",
        ),
        pytest.param(lambda c, ns: c.get(PYTORCH, "any", ns), id="get-jobs"),
        # It updates its own certificate's Secret only.
        pytest.param(
            lambda c, ns: c.replace(
                SECRETS, {"metadata": {"name": "k", "namespace": ns}, "stringData": {"a": "b"}}
            ),
            id="update-secrets",
        ),
        pytest.param(
            lambda c, ns: c.patch(TENSORBOARDS, "any", {"metadata": {"labels": {"a": "b"}}}, ns),
            id="patch-tensorboards",
        ),
    ],
)
def test_operator_is_refused_cluster_admin_actions(
    operator_client: KubeClient, namespace: str, action: Callable[[KubeClient, str], object]
) -> None:
    with pytest.raises(Forbidden):
        action(operator_client, namespace)
