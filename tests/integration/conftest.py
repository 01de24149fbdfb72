"""Fixtures for tests against the real local cluster (hack/cluster).

One cluster per test session (name ``$T9K_TEST_CLUSTER``, default
``t9k-test``), started here and stopped at the end unless
``T9K_KEEP_CLUSTER=1``; each test gets its own namespace. A cluster that
cannot be started fails the session: these tests never skip.

Gang schedulers (fixtures ``volcano``, ``coscheduling``, ``gang_schedulers``)
and Kueue (fixture ``kueue``) are added to that cluster on first use and run
until it stops. Their binaries come from `make binaries` too; when they were
never built, their tests fail with that remedy (never skip), like the
cluster's own.

The operator under test authenticates as its own ServiceAccount, bound by
the RBAC in manifests/rbac/, never as cluster-admin.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.resources import NAMESPACES
from tests.integration.cluster import (
    ROOT,
    Cluster,
    GangScheduler,
    Kueue,
    MissingBinaries,
    create_namespace,
    delete_quietly,
    env_flag,
    request_token,
    session_cluster_name,
)
from tests.integration.cluster import (
    admin as admin_client,
)
from tests.integration.kubelet import Kubelet
from tests.integration.notification_receivers import HttpReceiver
from tests.integration.operator_process import OperatorProcess

OPERATOR_NAMESPACE = "t9k-system"
OPERATOR_SA = "t9k-operator"

T = TypeVar("T")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    try:
        handle = Cluster.start(session_cluster_name())
    except RuntimeError as exc:
        pytest.fail(f"the local cluster could not be started: {exc}", pytrace=False)
    yield handle
    if not env_flag("T9K_KEEP_CLUSTER"):
        handle.stop()


@pytest.fixture(scope="session")
def admin(cluster: Cluster) -> KubeClient:
    return admin_client(cluster)


@pytest.fixture
def kubelet(admin: KubeClient) -> Kubelet:
    """Drives manual pods' status as their kubelet would (tests/integration/kubelet.py)."""
    return Kubelet(admin)


def _add(what: str, start: Callable[[], T]) -> T:
    """``start()`` (an add-on started in the test cluster), or the test fails
    with why: never a skip."""
    missing = failure = ""
    try:
        return start()
    except MissingBinaries as exc:
        missing = str(exc)
    except RuntimeError as exc:
        failure = str(exc)
    # Outside the except blocks: the report shows the message, not a traceback chain.
    if failure:
        pytest.fail(f"{what} could not be started: {failure}", pytrace=False)
    pytest.fail(f"{what} binaries not built (run `make binaries`): {missing}", pytrace=False)


def _gang(cluster: Cluster, *names: str) -> dict[str, GangScheduler]:
    return _add("gang schedulers", lambda: cluster.start_gang(*names))


@pytest.fixture(scope="session")
def volcano(cluster: Cluster) -> GangScheduler:
    """The Volcano scheduler, running in the test cluster: pods with
    ``schedulerName: volcano`` and the annotation
    ``scheduling.k8s.io/group-name: <PodGroup>`` (scheduling.volcano.sh/v1beta1)
    are bound a whole group at a time. Queue ``default`` exists."""
    return _gang(cluster, "volcano")["volcano"]


@pytest.fixture(scope="session")
def coscheduling(cluster: Cluster) -> GangScheduler:
    """scheduler-plugins' kube-scheduler with Coscheduling (and its PodGroup
    controller), running in the test cluster: pods with ``schedulerName:
    scheduler-plugins-scheduler`` and the label
    ``scheduling.x-k8s.io/pod-group: <PodGroup>`` (scheduling.x-k8s.io/v1alpha1)
    are bound a whole group at a time."""
    return _gang(cluster, "coscheduling")["coscheduling"]


@pytest.fixture(scope="session")
def gang_schedulers(
    volcano: GangScheduler, coscheduling: GangScheduler
) -> dict[str, GangScheduler]:
    """Both gang schedulers, by name (``volcano``, ``coscheduling``)."""
    return {"volcano": volcano, "coscheduling": coscheduling}


@pytest.fixture(scope="session")
def kueue(cluster: Cluster) -> Kueue:
    """The Kueue manager (its controllers and scheduler), running in the test
    cluster with all of Kueue's CRDs: Workloads naming a LocalQueue are
    admitted within their ClusterQueue's quota. Its admission webhooks are
    not registered (its CRDs' conversion webhook is); no job integration is
    used (it only admits Workloads)."""
    return _add("Kueue", cluster.start_kueue)


@pytest.fixture
def namespace(admin: KubeClient, request: pytest.FixtureRequest) -> Iterator[str]:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", request.node.name.replace("test_", "").lower())
    prefix = "t-" + cleaned[:40].strip("-")
    name = create_namespace(admin, prefix)
    yield name
    delete_quietly(admin, NAMESPACES, name, None)


@pytest.fixture(scope="session")
def rbac_installed(cluster: Cluster) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "rbac"))


@pytest.fixture(scope="session")
def crds_installed(cluster: Cluster) -> None:
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "manifests" / "crds")
    )
    cluster.wait_established("crd", "-l", "app.kubernetes.io/part-of=t9k-operator")


@pytest.fixture(scope="session")
def priority_classes(cluster: Cluster) -> None:
    """The PriorityClasses behind the T9k priorities, as the install applies them."""
    cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "scheduling"))


@pytest.fixture(scope="session")
def operator_kubeconfig(
    cluster: Cluster,
    admin: KubeClient,
    rbac_installed: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """Kubeconfig of the operator's ServiceAccount (token from the TokenRequest API)."""
    token = request_token(admin, OPERATOR_NAMESPACE, OPERATOR_SA)
    return cluster.token_kubeconfig(tmp_path_factory.mktemp("sa") / "kubeconfig", token)


@pytest.fixture
def operator_client(operator_kubeconfig: Path) -> KubeClient:
    return KubeClient.from_config(str(operator_kubeconfig))


@pytest.fixture
def start_operator(
    operator_kubeconfig: Path, tmp_path: Path, crds_installed: None
) -> Iterator[Callable[..., OperatorProcess]]:
    """Start operator processes (as the ServiceAccount); all are killed at teardown."""
    started: list[OperatorProcess] = []

    def start(*args: str) -> OperatorProcess:
        proc = OperatorProcess(
            operator_kubeconfig, tmp_path / f"operator-{len(started)}.log", *args
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def restart_operator(
    start_operator: Callable[..., OperatorProcess],
) -> Callable[[], OperatorProcess]:
    """Start another operator process (the previous one is the test's to kill)."""
    return lambda: start_operator()


@pytest.fixture
def operator(start_operator: Callable[..., OperatorProcess]) -> OperatorProcess:
    """One operator for the test, as the ServiceAccount, all namespaces, ready."""
    proc = start_operator()
    proc.wait_ready()
    return proc


@pytest.fixture(scope="session")
def operator_image() -> Path:
    """The operator image's folder that hack/release/rootfs makes from the
    Dockerfile with Debian's packages (``root/``, ``config.json``,
    ``build.json``); cached, and built by `make test` before the tests start
    (one to two minutes cold)."""
    proc = subprocess.run(
        [sys.executable, "-m", "hack.release.rootfs", "build"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"hack/release/rootfs build failed:\n{proc.stderr[-4000:]}", pytrace=False)
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    """A real HTTP server on a free port of this machine that keeps what it is
    sent (the notifications' tests' endpoint)."""
    r = HttpReceiver()
    yield r
    r.close()
