"""The TensorBoard's program, for real: the pod exactly as the builder renders it
runs TensorBoard (the ``tensorboard`` package from PyPI) on event files a real
writer made (``tensorboardX``, from PyPI), and TensorBoard's HTTP API lists
every fileset's runs under the run-group names the builder gave them.

The pod runs on the pod host (tests/integration/podhost), as kubelet and a
container runtime would run it: its own network namespace, an overlay root,
and each PersistentVolumeClaim bound in read-only at the path the builder
renders (``/t9k/pvc/<claim>``). Nothing is substituted in the command or the
mount paths. What stands in for the cluster: a claim's bound volume is a
directory of this machine (``Node.add_claim``), and the image is this
machine's root with ``tensorboard`` on its PATH (a ``tensorflow/tensorflow``
image has it there). Both packages are test dependencies (pyproject.toml):
a missing one is an import error, never a skip.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter

from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard import build
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK, PodRun

TENSORBOARD = Path(sys.executable).with_name("tensorboard")
IMAGE = STOCK.derive("tensorboard", symlinks={"/usr/local/bin/tensorboard": str(TENSORBOARD)})

FILESETS = [
    "t9k://pvc/yolov5/yolov5_pytorch/run/train/",  # the T9k examples' form
    "t9k://pvc/logs/exp:1",  # a colon in a directory name
]


def write_events(directory: Path, tag: str, values: list[float]) -> None:
    """Event files as a training script writes them (tensorboardX's SummaryWriter)."""
    writer = SummaryWriter(str(directory))
    for step, value in enumerate(values):
        writer.add_scalar(tag, value, step)
    writer.close()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    assert TENSORBOARD.exists(), f"{TENSORBOARD}: install the test extras (pip install -e .[test])"
    n = Node(tmp_path / "node", namespace="demo")
    yield n
    n.close()


def tensorboard(name: str = "mnist") -> TensorBoardObject:
    return TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": name, "namespace": "demo", "uid": "u"},
            "spec": {"image": "tensorflow/tensorflow:2.14.0", "trainingLogFilesets": FILESETS},
        }
    )


def get(run: PodRun, path: str, timeout: float = 10) -> tuple[int, Any]:
    """GET ``path`` from TensorBoard, from inside its pod (as kubectl exec would)."""
    code = (
        "import json, sys, urllib.request\n"
        f"r = urllib.request.urlopen('http://127.0.0.1:{build.PORT}{path}', timeout=5)\n"
        "body = r.read().decode()\n"
        "print(r.status)\n"
        "print(body if r.headers.get_content_type() == 'application/json' else 'null')\n"
    )
    out = run.exec(build.CONTAINER, [sys.executable, "-c", code], timeout=timeout)
    if out.returncode != 0:
        return 0, out.stderr
    status, body = out.stdout.split("\n", 1)
    return int(status), json.loads(body)


def wait_for_runs(run: PodRun, want: set[str], timeout: float = 90) -> list[str]:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        code, last = get(run, "/data/runs")
        if code == 200 and want <= set(last):
            return list(last)
        time.sleep(1)
    raise AssertionError(
        f"TensorBoard did not list {sorted(want)} within {timeout}s: last answer {last!r}; "
        f"its log:\n{run.logs(build.CONTAINER)[-3000:]}"
    )


def test_the_rendered_pod_serves_every_fileset_as_named_runs(node: Node, tmp_path: Path) -> None:
    claims = {name: tmp_path / "volumes" / name for name in ("yolov5", "logs")}
    write_events(claims["yolov5"] / "yolov5_pytorch/run/train", "loss", [0.9, 0.5, 0.2])
    write_events(claims["logs"] / "exp:1/seed-0", "accuracy", [0.1, 0.6])
    write_events(claims["logs"] / "exp:1/seed-1", "accuracy", [0.2, 0.7])
    for name, contents in claims.items():
        node.add_claim(name, contents)
    tb = tensorboard()
    pod = build.build_pod(tb)
    run = node.run_pod(pod, IMAGE)

    runs = wait_for_runs(
        run,
        {"yolov5/yolov5_pytorch/run/train/.", "logs/exp_1/seed-0", "logs/exp_1/seed-1"},
    )
    assert len(runs) == 3, runs
    code, tags = get(run, "/data/plugin/scalars/tags")
    assert code == 200
    assert set(tags["yolov5/yolov5_pytorch/run/train/."]) == {"loss"}
    assert set(tags["logs/exp_1/seed-1"]) == {"accuracy"}
    # The readiness probe's path answers, so kubelet marks the pod Ready.
    probe = pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]
    assert get(run, probe["path"])[0] == 200
    # The claims are read-only in the container; TensorBoard never needed to write.
    touch = run.exec(build.CONTAINER, ["touch", "/t9k/pvc/logs/written-by-tensorboard"])
    assert touch.returncode != 0 and "Read-only file system" in touch.stderr
    assert not (claims["logs"] / "written-by-tensorboard").exists()


def test_runs_written_after_the_start_appear(node: Node, tmp_path: Path) -> None:
    """TensorBoard reads a fileset again and again: a job still training is followed."""
    claims = {name: tmp_path / "volumes" / name for name in ("yolov5", "logs")}
    write_events(claims["yolov5"] / "yolov5_pytorch/run/train", "loss", [1.0])
    (claims["logs"] / "exp:1").mkdir(parents=True)
    for name, contents in claims.items():
        node.add_claim(name, contents)
    run = node.run_pod(build.build_pod(tensorboard()), IMAGE)
    wait_for_runs(run, {"yolov5/yolov5_pytorch/run/train/."})
    write_events(claims["logs"] / "exp:1/late", "loss", [0.3])
    wait_for_runs(run, {"logs/exp_1/late"})
