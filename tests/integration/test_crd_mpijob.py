"""The generated MPIJob CRD on a real API server.

Every MPIJob example of the product manual, read from the manual itself
(``shared/specs/mpijob.md`` beside the repository), applies unchanged
(server-side, dry run here; for real, stored unpruned, in test_crd_kinds.py),
its lone nameless containers included; the documented defaults are filled in,
bad specs are refused at admission naming the field, and kubectl explain
shows the descriptions. :data:`INVALID` and :data:`PAUSED` feed
test_crd_kinds.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api.crd import MSG_JOB_NAME
from t9k_operator.api.mpijob import (
    CRD,
    MSG_AUTH_MOUNT_PATH,
    MSG_AUTH_MOUNT_PLACE,
    MSG_MCA_KEY,
    MSG_MPI_HOME,
    MSG_NAMELESS_CONTAINER,
    MSG_POD_NAME_LENGTH,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_SSHD_PATH,
    MPIJobObject,
)
from tests.integration.cluster import Cluster
from tests.integration.crd_helpers import applied, install_crd, stored_object
from tests.unit.api.test_mpijob_models import JOB, SPEC_EXAMPLES

IMAGE = "t9kpublic/mpi-tutorial:2021022-2"


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def _job(spec: dict[str, Any], name: str = JOB, **worker: Any) -> str:
    """A job of ``spec`` over a minimal valid one; ``worker`` changes spec.worker's fields."""
    base = {
        "replicas": 2,
        "cmd": ["./prog"],
        "template": {"spec": {"containers": [{"name": "mpi-worker", "image": IMAGE}]}},
        **worker,
    }
    body = {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {"worker": base, **spec},
    }
    return yaml.safe_dump(body)


PAUSED = f"""\
apiVersion: {CRD.api_version}
kind: MPIJob
metadata:
  name: {JOB}
spec:
  worker:
    cmd: [./prog]
    template:
      spec:
        containers:
        - name: mpi-worker
          image: {IMAGE}
  runMode:
    pause:
      enabled: true
      resumeSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
"""
"""The manual's first pause example, made a whole job."""

_TWO_NAMELESS = {"spec": {"containers": [{"image": IMAGE}, {"image": IMAGE}]}}
INVALID: dict[str, tuple[str, list[str]]] = {
    "mpi-home-relative": (_job({"mpiHome": "usr/local"}), ["spec.mpiHome", MSG_MPI_HOME]),
    "mca-key-with-space": (_job({"mca": {"btl pml": "x"}}), ["spec.mca", MSG_MCA_KEY]),
    "mca-value-not-a-string": (_job({"mca": {"btl": 1}}), ["spec.mca.btl", "string"]),
    "sshd-path-relative": (
        _job({"ssh": {"sshdPath": "sshd"}}),
        ["spec.ssh.sshdPath", MSG_SSHD_PATH],
    ),
    "auth-path-relative": (
        _job({"ssh": {"sshAuthMountPath": ".ssh"}}),
        ["spec.ssh.sshAuthMountPath", MSG_AUTH_MOUNT_PATH],
    ),
    "auth-path-in-tmp": (
        _job({"ssh": {"sshAuthMountPath": "/tmp/k"}}),
        ["spec.ssh.sshAuthMountPath", MSG_AUTH_MOUNT_PLACE],
    ),
    "replicas-zero": (_job({}, replicas=0), ["spec.worker.replicas"]),
    "no-containers": (
        _job({}, template={"spec": {"containers": []}}),
        ["spec.worker.template.spec.containers"],
    ),
    "two-nameless-containers": (
        _job({}, template=_TWO_NAMELESS),
        ["spec.worker.template.spec.containers", MSG_NAMELESS_CONTAINER],
    ),
    "extra-args-not-strings": (_job({}, extraMPIArgs=[["-N"]]), ["spec.worker.extraMPIArgs"]),
    "resume-args-alone": (
        _job({"runMode": {"pause": {"resumeSpecs": [{"type": "worker", "args": ["-v"]}]}}}),
        ["spec.runMode", MSG_RESUME_ARGS_NEED_COMMAND],
    ),
    "name-too-long": (_job({}, name="m" * 55), [MSG_POD_NAME_LENGTH]),
    "name-not-dns-1035": (_job({}, name="1-mpi"), [MSG_JOB_NAME]),
}


@pytest.mark.parametrize("name", sorted(SPEC_EXAMPLES))
def test_each_manual_example_applies_unchanged_dry_run(
    cluster: Cluster, crd: None, namespace: str, name: str
) -> None:
    proc = cluster.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=t9k-test",
        "-n",
        namespace,
        "-o",
        "json",
        "-f",
        "-",
        input_=SPEC_EXAMPLES[name],
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert MPIJobObject.from_dict(yaml.safe_load(proc.stdout)).name == JOB


def test_defaults_are_filled_by_the_server(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, _job({"ssh": {}, "runPolicy": {}}))
    spec = stored_object(cluster, CRD, namespace, JOB)["spec"]
    assert spec["ssh"] == {"sshAuthMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"}
    assert spec["runPolicy"] == {"cleanUpWorkers": False}
    # no spec.mca is filled in: a 2025-layout job would then mix the layouts
    assert "mca" not in spec and spec["worker"]["extraMPIArgs"] == []


def test_a_job_without_cmd_is_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    """As the manual's examples are; the operator then fails it naming spec.worker.cmd."""
    body = yaml.safe_load(_job({}))
    del body["spec"]["worker"]["cmd"]
    applied(cluster, namespace, yaml.safe_dump(body))


def test_kubectl_explain_shows_descriptions(cluster: Cluster, crd: None) -> None:
    out = cluster.kubectl("explain", "mpijob.spec.worker.extraMPIArgs").stdout
    assert "mpirun" in out
    out = cluster.kubectl("explain", "mpijob.spec.mpiHome").stdout
    assert "--prefix" in out
