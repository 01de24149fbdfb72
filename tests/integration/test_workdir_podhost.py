"""A job's workdir, run for real on the pod host (tests/integration/podhost):
pods as the kinds' builders render them and the workdir integration decorates
them, with their ConfigMap packed from a directory by the same packer ``t9k``
uses. The training script exists only in the workdir; the init container
unpacks it with the image's own ``sh`` and ``tar``, and the training finds it,
its executable helper (mode 0755) and a writable tree, as the user it runs
as. For an ssh-launched kind, the launcher's ``cd`` into its working directory
lands in the same tree on every worker."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import deepspeed as db
from t9k_operator.builders.common import NORMAL
from t9k_operator.integrations.workdir.build import config_map
from t9k_operator.integrations.workdir.integration import Workdir, WorkdirState
from t9k_operator.integrations.workdir.pack import pack
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.registry import by_kind
from t9k_operator.sdk.training import Training, prepare
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK
from tests.integration.test_ssh_launch import LAUNCHERS, ds_node, ds_raw

TRAIN = """\
import os, socket, stat, subprocess, sys
helper = os.stat("tools/helper.sh")
out = subprocess.run(["./tools/helper.sh"], capture_output=True, text=True, check=True)
with open("written-by-training.txt", "w") as f:
    f.write("ok")
os.chmod("train.py", 0o600)  # the tree is the training user's own
print(
    f"trained on {socket.gethostname()} in {os.getcwd()} as uid {os.getuid()}:",
    f"helper mode {stat.S_IMODE(helper.st_mode):o} owner {helper.st_uid}",
    f"says {out.stdout.strip()}; args {' '.join(sys.argv[1:])}",
    flush=True,
)
print("files:", " ".join(sorted(os.listdir("."))), flush=True)
"""


def workdir(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / "tools" / "helper.sh").write_text("#!/bin/sh\necho helped\n")
    (root / "tools" / "helper.sh").chmod(0o755)
    (root / "notes.tmp").write_text("left out")
    (root / ".t9kignore").write_text("*.tmp\n")
    return root


def with_workdir(job: dict[str, Any], root: Path, node: Node) -> WorkdirState:
    """The job's ConfigMap on the node, packed from ``root``; the integration's state."""
    job["metadata"]["annotations"] = {"batch.tensorstack.dev/workdir": "wd"}
    node.add(config_map(job, pack(root).archive))
    return WorkdirState("wd", present=True)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path / "node")
    yield n
    n.close()


def test_a_pytorch_replica_runs_the_script_only_its_workdir_has(node: Node, tmp_path: Path) -> None:
    kind = by_kind("PyTorchTrainingJob")
    raw: dict[str, Any] = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "pt", "namespace": "ns", "uid": "uid-pt"},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "debian:12",
                                    "command": ["python3", "train.py", "--epochs", "1"],
                                    "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
                                }
                            ]
                        }
                    },
                }
            ]
        },
    }
    state = with_workdir(raw, workdir(tmp_path / "w"), node)
    parsed = read(kind, raw)
    assert parsed.job is not None
    pod = kind.build_pod(parsed.job, "worker", 0, NORMAL, {})
    Workdir().decorate(state, parsed.view, pod)
    run = node.run_pod(pod, STOCK)
    assert run.wait("pytorch", 60) == 0, run.logs("pytorch")
    assert (
        "trained on pt-worker-0 in /t9k/workdir as uid 1000: helper mode 755 owner 1000 "
        "says helped; args --epochs 1"
    ) in run.logs("pytorch"), run.logs("pytorch")
    # notes.tmp stayed out (.t9kignore); the training could write beside its script.
    assert "files: .t9kignore tools train.py written-by-training.txt" in run.logs("pytorch")


def test_deepspeed_launcher_and_worker_share_the_workdir_path(node: Node, tmp_path: Path) -> None:
    # The stand-in launcher, as the real one does, runs each rank after a `cd`
    # to its own working directory; here each rank runs the script itself.
    launcher = (LAUNCHERS / "deepspeed").read_text()
    remote = 'echo \\"rank on'
    assert remote in launcher
    launcher = launcher.replace(remote, "python3 ${args[*]} || exit 1; " + remote, 1)
    image = STOCK.derive("deepspeed-runs", files={"/usr/local/bin/deepspeed": (launcher, 0o755)})
    raw = ds_raw(2)
    state = with_workdir(raw, workdir(tmp_path / "w"), node)
    job = db.Job.from_dict(raw)
    ds_node(node, job)
    view = read(by_kind("DeepSpeedJob"), raw).view
    pods = [db.build_pod(job, i) for i in (0, 1)]
    for pod in pods:
        Workdir().decorate(state, view, pod)
    node.run_pod(pods[1], STOCK)
    w0 = node.run_pod(pods[0], image)
    assert w0.wait("worker", 90) == 0, w0.logs("worker")
    log = w0.logs("worker")
    for host in ("ds-worker-0", "ds-worker-1"):
        assert re.search(
            rf"^{host}: trained on {host} in /t9k/workdir as uid 0: helper mode 755 owner 0 "
            r"says helped; args --epochs 2$",
            log,
            re.M,
        ), log


def trained(greeting: str) -> None:
    import os

    print(f"{greeting} from rank {os.environ['RANK']} in {os.getcwd()}", flush=True)


def test_a_function_runs_as_a_job_from_its_generated_workdir(node: Node) -> None:
    """client.train's job, as the cluster gets it: the manifest and archive
    it creates, the pod the kind builds and the workdir integration decorates."""
    manifest, archive = prepare(
        Training(trained, "fn", "debian:12", kwargs={"greeting": "hi"}, python="python3")
    )
    manifest["metadata"].update(namespace="ns", uid="uid-fn")
    manifest["metadata"]["annotations"] = {"batch.tensorstack.dev/workdir": "fn-workdir"}
    node.add(config_map(manifest, archive.archive))
    kind = by_kind("PyTorchTrainingJob")
    parsed = read(kind, manifest)
    assert parsed.job is not None
    pod = kind.build_pod(parsed.job, "worker", 0, NORMAL, {})
    Workdir().decorate(WorkdirState("fn-workdir", present=True), parsed.view, pod)
    run = node.run_pod(pod, STOCK)
    assert run.wait("pytorch", 60) == 0, run.logs("pytorch")
    assert "hi from rank 0 in /t9k/workdir" in run.logs("pytorch")
