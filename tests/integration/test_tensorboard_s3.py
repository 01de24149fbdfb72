"""The TensorBoard's S3 and HTTP logs, for real: the pod exactly as the builder
renders it runs TensorBoard (from PyPI, without TensorFlow, with boto3) on an
event file that tensorboardX wrote and that sits in a real S3 server, and on
one served over HTTP; TensorBoard's HTTP API serves their scalars.

The S3 server is SeaweedFS (``weed mini``: master, volume server, filer and
S3 gateway in one process), built from its Go module by ``python3 -m
hack.cluster tool seaweedfs`` (hack/third_party/seaweedfs; `make binaries`
builds it), started here on this machine with one identity whose keys the
test's Secret holds. The pod reaches it as a Service of its namespace (the
pod host's ``host_services``), the Secret's keys reach TensorBoard as kubelet
gives them (``secretKeyRef``), and boto3 is the pinned set of
requirements/tensorboard-s3-test.txt (hack/ensure-frameworks.py), first on
the image's PYTHONPATH, as an image built for S3 logs would have it.
"""

from __future__ import annotations

import base64
import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard import build
from tests.integration.cluster import cluster_script
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK
from tests.integration.test_tensorboard_program import get, wait_for_runs, write_events

ROOT = Path(__file__).resolve().parents[2]
ACCESS_KEY, SECRET_KEY = "tbtestaccess7f3e", "tbtestsecret-4c1d9a8b"
BUCKET = "training"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def boto3_folder() -> Path:
    proc = subprocess.run(
        ["/usr/bin/python3", str(ROOT / "hack" / "ensure-frameworks.py"), "tensorboard-s3"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"hack/ensure-frameworks.py failed:\n{proc.stderr[-4000:]}", pytrace=False)
    return Path(proc.stdout.split()[-1])


def s3_image(folder: Path) -> Any:
    """This machine's root with a tensorboard that has boto3 (the pinned set
    first on its path), as an image built for S3 logs has it."""
    script = (
        "#!/bin/sh\n"
        f'PYTHONPATH={folder} exec {sys.executable} -c "from tensorboard.main import run_main; '
        'run_main()" "$@"\n'
    )
    return STOCK.derive("tensorboard-s3", files={"/usr/local/bin/tensorboard": (script, 0o755)})


class Weed:
    """``weed mini`` on free ports, its S3 gateway on :attr:`port` (the parts
    the test does not use, whose ports are fixed, are off)."""

    def __init__(self, binary: Path, data: Path) -> None:
        data.mkdir(parents=True)
        config = data / "s3.json"
        identity = {
            "name": "tensorboard",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "List", "Write"],
        }
        config.write_text(json.dumps({"identities": [identity]}))
        self.port = free_port()
        ports = {
            "master.port": free_port(),
            "volume.port": free_port(),
            "filer.port": free_port(),
            "s3.port": self.port,
        }
        args = [f"-{k}={v}" for k, v in ports.items()]
        self.log = (data / "weed.log").open("w")
        self.proc = subprocess.Popen(
            [str(binary), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=0.0.0.0",
             f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
             "-admin.port.legacy=0", "-admin.ui=false", "-webdav=false", *args],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.data = data

    def client(self, folder: Path) -> Any:
        sys.path.insert(0, str(folder))
        try:
            import boto3
        finally:
            sys.path.remove(str(folder))
        return boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.port}",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def wait_ready(self, client: Any, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.data / "weed.log").read_text()[-3000:]
            try:
                client.create_bucket(Bucket=BUCKET)
                return
            except Exception as exc:  # not serving yet
                last = exc
                time.sleep(1)
        raise AssertionError(f"weed's S3 gateway did not answer: {last}")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def weed(tmp_path: Path) -> Iterator[Weed]:
    (folder,) = cluster_script("tool", "seaweedfs").stdout.split()
    w = Weed(Path(folder) / "weed", tmp_path / "weed")
    yield w
    w.close()


def tensorboard(log_dir: dict[str, Any]) -> TensorBoardObject:
    return TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": "mnist", "namespace": "demo", "uid": "u"},
            "spec": {"image": "t9k/tensorboard-s3", "logDir": log_dir},
        }
    )


def test_tensorboard_serves_the_scalars_of_an_event_file_in_a_real_s3_server(
    weed: Weed, tmp_path: Path
) -> None:
    folder = boto3_folder()
    client = weed.client(folder)
    weed.wait_ready(client)
    local = tmp_path / "written"
    write_events(local / "seed-0", "loss", [0.9, 0.4, 0.1])
    (event,) = (local / "seed-0").iterdir()
    client.upload_file(str(event), BUCKET, f"mnist/seed-0/{event.name}")

    node = Node(tmp_path / "node", namespace="demo", host_services=["store.demo"])
    try:
        values = {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "S3_ENDPOINT": f"http://store.demo.svc.cluster.local:{weed.port}",
            "AWS_REGION": "us-east-1",
        }
        node.add(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "store", "namespace": "demo"},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()},
            }
        )
        tb = tensorboard({"s3": {"secretRef": {"name": "store"}, "uri": [f"s3://{BUCKET}/mnist/"]}})
        pod = build.build_pod(tb)
        assert SECRET_KEY not in json.dumps(pod), "the secret reaches the pod by reference only"
        run = node.run_pod(pod, s3_image(folder))
        wait_for_runs(run, {f"{BUCKET}/mnist/seed-0"}, timeout=120)
        code, scalars = get(run, f"/data/plugin/scalars/scalars?run={BUCKET}/mnist/seed-0&tag=loss")
        assert code == 200, scalars
        assert [round(v, 3) for _, _, v in scalars] == [0.9, 0.4, 0.1]
        assert SECRET_KEY not in run.logs(build.CONTAINER)
    finally:
        node.close()


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    class Files(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, directory=str(root), **kw)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", free_port()), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, int(server.server_address[1])


def test_tensorboard_serves_the_scalars_of_an_event_file_behind_an_http_url(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write_events(site / "runs", "accuracy", [0.2, 0.7])
    (event,) = (site / "runs").iterdir()
    server, port = serve(site)
    node = Node(tmp_path / "node", namespace="demo", host_services=["files.demo"])
    try:
        url = f"http://files.demo.svc.cluster.local:{port}/runs/{event.name}"
        pod = build.build_pod(tensorboard({"http": {"url": [url]}}))
        image = STOCK.derive(
            "tensorboard",
            symlinks={
                "/usr/local/bin/tensorboard": str(Path(sys.executable).with_name("tensorboard"))
            },
        )
        run = node.run_pod(pod, image)
        name = url.split("://", 1)[1].replace(":", "_")
        wait_for_runs(run, {f"{name}/."}, timeout=120)
        code, scalars = get(run, f"/data/plugin/scalars/scalars?run={name}/.&tag=accuracy")
        assert code == 200, scalars
        assert [round(v, 3) for _, _, v in scalars] == [0.2, 0.7]
    finally:
        node.close()
        server.shutdown()
