"""The t9k command and its SDK against the local cluster's API server, with
the operator running (as its ServiceAccount): no mocked API anywhere.

The CLI runs as its console script, authenticated by the cluster's admin
kubeconfig as a user's would be; its logs are the containers' logs KWOK
serves through its kubelet endpoint (each container's own, every line naming
its pod and container: hack/third_party/kwok/pod_logs.py), and ``t9k tensorboard``
forwards through the API server to KWOK's port-forward
(hack/third_party/kwok/tensorboard_stub.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.api.pytorch import PyTorchTrainingJobObject
from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS
from t9k_operator.sdk import (
    AlreadyExists,
    BadJob,
    Client,
    Invalid,
    JobFailed,
    NotFound,
    Unsupported,
    WaitTimeout,
)
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, provide_claims

pytestmark = pytest.mark.usefixtures("operator")

T9K = Path(sys.executable).with_name("t9k")
LOG_TEXTS = ["starting training", "epoch 1 loss 0.50", "epoch 2 loss 0.25", "training finished"]
"""hack/third_party/kwok/container.log's lines, which every container on the KWOK nodes logs."""


def log_lines(pod: str, container: str) -> list[str]:
    """The log of ``container`` of ``pod`` on the KWOK nodes: each line names
    them (hack/third_party/kwok/pod_logs.py), so a log read from another pod or another
    container of it is told apart."""
    return [f"{pod}/{container} {text}" for text in LOG_TEXTS]


def prefixed(replica: str, pod: str, container: str) -> list[str]:
    """That log as ``t9k logs --all`` (or ``--prefix``) prints it."""
    return [f"[{replica}] {line}" for line in log_lines(pod, container)]


class Run:
    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.base = [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]

    def __call__(
        self, *args: str, input_: str | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.base, *args], input=input_, capture_output=True, text=True, timeout=timeout
        )

    def ok(self, *args: str, input_: str | None = None, timeout: float = 90) -> str:
        proc = self(*args, input_=input_, timeout=timeout)
        assert proc.returncode == 0, f"t9k {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def background(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )


@pytest.fixture
def t9k(cluster: Cluster, namespace: str) -> Run:
    return Run(cluster, namespace)


@pytest.fixture
def sdk(cluster: Cluster, namespace: str) -> Iterator[Client]:
    with Client(str(cluster.kubeconfig), namespace=namespace) as client:
        yield client


def runs_for(seconds: int) -> list[str]:
    return ["--annotation", f"kwok.t9k.dev/run-duration={seconds}s"]


def pytorch_manifest(name: str, run: str = "3s", exit_code: int = 0, **spec: Any) -> dict[str, Any]:
    annotations = {"kwok.t9k.dev/run-duration": run, "kwok.t9k.dev/exit-code": str(exit_code)}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": 2,
                    "restartPolicy": "Never",
                    "template": {
                        "metadata": {"annotations": annotations},
                        "spec": {"containers": [{"name": "pytorch", "image": "torch:1"}]},
                    },
                }
            ],
            **spec,
        },
    }


def test_help_lists_every_command() -> None:
    out = subprocess.run([str(T9K), "--help"], capture_output=True, text=True, check=True).stdout
    for command in (
        "submit", "create", "list", "describe", "logs", "wait", "pause", "resume",
        "delete", "top", "tensorboard", "completion",
    ):  # fmt: skip
        assert f"    {command} " in out
        assert f"  t9k {command}" in out or command == "completion"


def test_submit_applies_strictly_and_says_what_the_api_server_refused(
    t9k: Run, tmp_path: Path, namespace: str, admin: KubeClient
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(pytorch_manifest("applied")))
    assert t9k.ok("submit", "-f", str(path)) == (
        "pytorchtrainingjob.batch.tensorstack.dev/applied submitted\n"
    )
    # Server-side apply: submitting it again is no error, and a change is applied.
    changed = pytorch_manifest("applied", run="4s")
    out = t9k.ok("submit", "-f", "-", "-o", "json", input_=json.dumps(changed))
    template = json.loads(out)["spec"]["replicaSpecs"][0]["template"]
    assert template["metadata"]["annotations"]["kwok.t9k.dev/run-duration"] == "4s"
    # Strict field validation: the API server's own words for an unknown field.
    bad = pytorch_manifest("bad")
    bad["spec"]["replicaSpecs"][0]["replcas"] = 3
    proc = t9k("submit", "-f", "-", input_=yaml.safe_dump(bad))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")
    # (server-side apply's words: strict validation of an apply patch against the schema)
    assert ".spec.replicaSpecs[0].replcas: field not declared in schema" in proc.stderr
    # Admission's CEL rules: their message, as the API server gives it.
    two_masters = pytorch_manifest("masters")
    two_masters["spec"]["replicaSpecs"][0]["type"] = "master"
    proc = t9k("submit", "-f", "-", input_=yaml.safe_dump(two_masters))
    assert proc.returncode == 1 and "master" in proc.stderr, proc.stderr
    # Something that is not a job this tool runs.
    proc = t9k("submit", "-f", "-", input_="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert proc.returncode == 1 and "not a job this tool runs: v1 ConfigMap" in proc.stderr


def test_create_every_kind_then_list_describe_wait_and_logs(
    t9k: Run, namespace: str, admin: KubeClient
) -> None:
    # Each replica runs 60 s: every job is still Running while the test lists,
    # describes and reads logs, however long a busy machine takes to start all four.
    for kind in ("pytorch", "deepspeed", "colossalai", "mindspore"):
        out = t9k.ok(
            "create", kind, f"{kind}-job", "--image", "train:1", "--workers", "2",
            "--gpus", "1", *runs_for(60), "--", "python", "train.py", "--epochs", "3",
        )  # fmt: skip
        assert out.endswith(f"/{kind}-job created\n")
    t9k.ok("wait", "pytorch-job", "--for", "Running", "--timeout", "60s")
    for kind in ("deepspeed", "colossalai", "mindspore"):
        t9k.ok("wait", f"{kind}-job", "--for", "Running", "--timeout", "60s")

    def every_gpu_allocated() -> str | None:
        out = t9k.ok("list")
        rows = [r.split() for r in out.splitlines()[1:]]
        return out if len(rows) == 4 and all(r[5] == "2" for r in rows) else None

    table = wait_for(every_gpu_allocated, 30, "each job's 2 GPUs allocated")
    header, *rows = table.splitlines()
    assert header.split() == [
        "NAME", "KIND", "PHASE", "REASON", "GPUS", "ALLOCATED", "DURATION", "PROGRESS", "ETA",
        "START", "NODES", "QUEUE",
    ]  # fmt: skip
    kinds = {r.split()[0]: r.split()[1:6] for r in rows}
    # ColossalAI's launcher asks for no GPU: 2 workers of 1 GPU each, for every kind.
    assert kinds == {
        "colossalai-job": ["ColossalAIJob", "Running", "-", "2", "2"],
        "deepspeed-job": ["DeepSpeedJob", "Running", "-", "2", "2"],
        "mindspore-job": ["MSJob", "Running", "-", "2", "2"],
        "pytorch-job": ["PyTorchTrainingJob", "Running", "-", "2", "2"],
    }
    assert t9k.ok("list", "-o", "name").splitlines() == [
        "colossalaijob.batch.tensorstack.dev/colossalai-job",
        "deepspeedjob.batch.tensorstack.dev/deepspeed-job",
        "msjob.mindspore.gitee.com/mindspore-job",
        "pytorchtrainingjob.batch.tensorstack.dev/pytorch-job",
    ]
    everywhere = t9k.ok("list", "-A")
    assert everywhere.splitlines()[0].split()[0] == "NAMESPACE"
    assert f"{namespace}   pytorch-job" in everywhere

    described = t9k.ok("describe", "mindspore-job")
    assert "Kind:        MSJob" in described
    assert "GPUs:        2 requested, 2 allocated" in described
    replicas = described.split("Replicas:\n")[1].split("\n\n")[0].splitlines()
    assert replicas[0].split() == ["REPLICA", "PHASE", "EXIT", "CODE", "RESTARTS", "NODE"]
    assert [r.split()[:4] for r in replicas[1:]] == [
        ["scheduler-0", "Running", "-", "0"],
        ["worker-0", "Running", "-", "0"],
        ["worker-1", "Running", "-", "0"],
    ]
    assert "Scheduled   Pod/mindspore-job-worker-1" in described  # its pods' Events too

    # One replica's log (the leader's by default), or all of them, prefixed.
    assert t9k.ok("logs", "pytorch-job").splitlines() == log_lines(
        "pytorch-job-worker-0", "pytorch"
    )
    assert t9k.ok("logs", "mindspore-job", "--replica", "worker-1").splitlines() == log_lines(
        "mindspore-job-worker-1", "mindspore"
    )
    every = t9k.ok("logs", "deepspeed-job", "--all").splitlines()
    assert every == [
        line
        for i in (0, 1)
        for line in prefixed(f"worker-{i}", f"deepspeed-job-worker-{i}", "worker")
    ]
    proc = t9k("logs", "pytorch-job", "--replica", "worker-7")
    assert proc.returncode == 1
    assert "has no replica worker-7 (it has worker-0, worker-1)" in proc.stderr

    done = t9k("wait", "pytorch-job", "--for", "Succeeded", "--timeout", "120s")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "pytorchtrainingjob.batch.tensorstack.dev/pytorch-job succeeded\n"
    # Progress on stderr: the phase it found (Running, or Succeeded already on a
    # fast machine: the job may have ended while the test read its logs).
    assert re.search(r"^\[\d+s\] pytorch-job: (Running|Succeeded)", done.stderr, re.M), done.stderr
    assert "pytorch-job: Succeeded" in done.stderr


def test_wait_exits_non_zero_with_the_reason_or_on_timeout(t9k: Run, admin: KubeClient) -> None:
    t9k.ok("submit", "-f", "-", input_=json.dumps(pytorch_manifest("fails", exit_code=3)))
    t9k.ok("submit", "-f", "-", input_=json.dumps(pytorch_manifest("slow", run="120s")))
    proc = t9k("wait", "fails", "--for", "Succeeded", "--timeout", "60s")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith("error: job fails failed: ")
    # Finished: the wait itself succeeds, the exit code says the job failed.
    finished = t9k("wait", "fails", "--timeout", "10s")
    assert finished.returncode == 1 and "failed" in finished.stdout
    started = time.monotonic()
    proc = t9k("wait", "slow", "--for", "Succeeded", "--timeout", "2s")
    assert proc.returncode == 3, proc.stderr
    assert "timed out after 2s waiting for job slow to be Succeeded" in proc.stderr
    assert time.monotonic() - started < 20
    assert t9k("wait", "nothing", "--timeout", "1s").returncode == 1


def create(t9k: Run, kind: str, name: str, seconds: int, *flags: str) -> None:
    t9k.ok(
        "create", kind, name, "--image", "t:1", *flags, *runs_for(seconds), "--", "python", "x.py"
    )


def test_pause_resume_delete(t9k: Run, namespace: str, admin: KubeClient) -> None:
    create(t9k, "pytorch", "pausing", 120, "--workers", "2")
    t9k.ok("wait", "pausing", "--for", "Running", "--timeout", "60s")
    assert t9k.ok("pause", "pausing") == "pytorchtrainingjob.batch.tensorstack.dev/pausing paused\n"
    t9k.ok("wait", "pausing", "--for", "Paused", "--timeout", "60s")
    wait_for(lambda: not admin.list_all(PODS, namespace)[0], 30, "the paused job's pods deleted")
    assert t9k.ok("list").splitlines()[1].split()[:3] == ["pausing", "PyTorchTrainingJob", "Paused"]
    t9k.ok("resume", "pausing")
    t9k.ok("wait", "pausing", "--for", "Running", "--timeout", "60s")
    t9k.ok("create", "mindspore", "ms", "--image", "m:1", "--", "python", "x.py")
    proc = t9k("pause", "ms")
    assert proc.returncode == 1 and "a MSJob cannot be paused" in proc.stderr
    assert t9k.ok("delete", "pytorch/pausing").endswith("pausing deleted\n")
    wait_for(lambda: t9k("describe", "pausing").returncode == 1, 30, "the job gone")
    proc = t9k("describe", "pausing")
    assert proc.stderr == f'error: job "pausing" not found in namespace "{namespace}"\n'


def test_logs_follow_a_restarted_replica_until_the_job_ends(
    t9k: Run, namespace: str, admin: KubeClient
) -> None:
    create(t9k, "pytorch", "followed", 15, "--workers", "2")
    t9k.ok("wait", "followed", "--for", "Running", "--timeout", "60s")
    follower = t9k.background("logs", "followed", "--all", "-f")
    try:
        time.sleep(4)
        # The replica's pod vanishes; the operator recreates it, and the log follows.
        admin.delete(PODS, "followed-worker-1", namespace)
        out, err = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    lines = out.splitlines()
    assert lines.count("[worker-1] followed-worker-1/pytorch starting training") == 2, out
    assert lines.count("[worker-0] followed-worker-0/pytorch training finished") == 1, out
    assert {line.split()[1].rsplit("/", 1)[0] for line in lines} == {
        "followed-worker-0",
        "followed-worker-1",
    }, out
    assert "[worker-1] replica worker-1 restarted: following its new pod" in err


def test_logs_read_the_deciding_replicas_training_container_not_a_sidecars(
    t9k: Run, sdk: Client
) -> None:
    """Workers listed before the master, and every pod with an init container,
    a sidecar (a restartable init container) and an extra container listed
    before the training one: each log read is exactly the one asked for."""
    job = pytorch_manifest("picked", run="60s")
    workers = job["spec"]["replicaSpecs"][0]
    pod_spec = workers["template"]["spec"]
    pod_spec["initContainers"] = [
        {"name": "fetch", "image": "busybox:1"},
        {"name": "proxy", "image": "envoy:1", "restartPolicy": "Always"},
    ]
    pod_spec["containers"].insert(0, {"name": "exporter", "image": "exporter:1"})
    job["spec"]["replicaSpecs"].append({**workers, "type": "master", "replicas": 1})
    t9k.ok("submit", "-f", "-", input_=json.dumps(job))
    t9k.ok("wait", "picked", "--for", "Running", "--timeout", "60s")
    master = log_lines("picked-master-0", "pytorch")
    # By default the master's (the replica whose outcome decides the job).
    assert t9k.ok("logs", "picked").splitlines() == master
    assert t9k.ok("logs", "picked", "--prefix").splitlines() == prefixed(
        "master-0", "picked-master-0", "pytorch"
    )
    one = t9k.ok("logs", "picked", "--replica", "worker-1").splitlines()
    assert one == log_lines("picked-worker-1", "pytorch")
    every = t9k.ok("logs", "picked", "--all").splitlines()
    assert every == [
        line
        for replica in ("master-0", "worker-0", "worker-1")
        for line in prefixed(replica, f"picked-{replica}", "pytorch")
    ]
    # The SDK's, each line with its replica and pod.
    assert [(line.replica, line.pod, line.text) for line in sdk.logs("picked")] == [
        ("master-0", "picked-master-0", text) for text in master
    ]
    assert [line.text for line in sdk.logs("picked", replica="worker-0")] == log_lines(
        "picked-worker-0", "pytorch"
    )
    assert [(line.replica, line.text) for line in sdk.logs("picked", all_replicas=True)] == [
        (replica, text)
        for replica in ("master-0", "worker-0", "worker-1")
        for text in log_lines(f"picked-{replica}", "pytorch")
    ]


def test_logs_of_an_mpijob_are_its_launchers_followed_until_it_ends(t9k: Run, sdk: Client) -> None:
    """The launcher decides an MPIJob (its mpirun's exit is the job's); its pod
    runs the ssh setup as an init container before the training container."""
    create(t9k, "mpi", "launched", 20, "--workers", "2")
    t9k.ok("wait", "launched", "--for", "Running", "--timeout", "60s")
    follower = t9k.background("logs", "launched", "-f")
    try:
        launcher = log_lines("launched-launcher", "mpi-worker")
        assert t9k.ok("logs", "launched").splitlines() == launcher
        one = t9k.ok("logs", "launched", "--replica", "worker-1").splitlines()
        assert one == log_lines("launched-worker-1", "mpi-worker")
        every = t9k.ok("logs", "launched", "--all").splitlines()
        assert every == [
            line
            for replica in ("launcher", "worker-0", "worker-1")
            for line in prefixed(replica, f"launched-{replica}", "mpi-worker")
        ]
        assert [(line.replica, line.pod, line.text) for line in sdk.logs("launched")] == [
            ("launcher", "launched-launcher", text) for text in launcher
        ]
        # Followed: the launcher's log, once, until the job has ended.
        out, err = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    assert out.splitlines() == launcher
    assert sdk.get("launched")["status"]["phase"] == "Succeeded"


def test_logs_follow_of_a_job_without_pods_waits_for_its_leader(t9k: Run) -> None:
    paused = pytorch_manifest("later", run="4s", runMode={"pause": {"enabled": True}})
    paused["spec"]["replicaSpecs"].insert(
        0, {**paused["spec"]["replicaSpecs"][0], "type": "master", "replicas": 1}
    )
    t9k.ok("submit", "-f", "-", input_=json.dumps(paused))
    t9k.ok("wait", "later", "--for", "Paused", "--timeout", "60s")
    follower = t9k.background("logs", "later", "-f")
    try:
        time.sleep(2)
        assert follower.poll() is None  # no pods: it waits
        t9k.ok("resume", "later")
        out, err = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    assert out.splitlines() == log_lines("later-master-0", "pytorch")  # the master's, once


def test_list_watch_prints_a_job_again_when_it_changes(t9k: Run) -> None:
    watcher = t9k.background("list", "--watch", "--interval", "1s")
    try:
        time.sleep(2)
        t9k.ok("submit", "-f", "-", input_=json.dumps(pytorch_manifest("watched", run="2s")))
        t9k.ok("wait", "watched", "--timeout", "60s")
        time.sleep(3)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=30)
    rows = [line.split() for line in out.splitlines()]
    assert rows[0][:3] == ["NAME", "KIND", "PHASE"]
    phases = [r[2] for r in rows[1:] if r[0] == "watched"]
    assert phases[-1] == "Succeeded" and len(phases) >= 2, out


def test_top_nodes_and_jobs_show_who_holds_the_gpus(t9k: Run, namespace: str) -> None:
    create(t9k, "deepspeed", "holder", 60, "--workers", "2", "--gpus", "3")
    t9k.ok("wait", "holder", "--for", "Running", "--timeout", "60s")
    holder = f"{namespace}/holder"

    def held() -> list[list[str]] | None:
        rows = [r.split() for r in t9k.ok("top", "nodes").splitlines()]
        holding = [r for r in rows[1:] if holder in r[4].split(",")]
        return rows if sum(int(r[2]) for r in holding) == 6 else None

    header, *rows = wait_for(held, 30, "the job's 6 GPUs held")
    assert header == ["NODE", "GPUS", "ALLOCATED", "FREE", "JOBS"]
    assert len(rows) == 4 and all(r[1] == "8" for r in rows)
    for r in rows:
        assert int(r[3]) == 8 - int(r[2])
    jobs = t9k.ok("top", "jobs").splitlines()
    assert jobs[0].split() == ["NAME", "KIND", "PHASE", "GPUS", "ALLOCATED", "NODES"]
    assert jobs[1].split()[:5] == ["holder", "DeepSpeedJob", "Running", "6", "6"]


def test_tensorboard_forwards_to_the_jobs_tensorboard(
    t9k: Run, admin: KubeClient, namespace: str, sdk: Client
) -> None:
    provide_claims(
        Jobs(admin, namespace),
        {"spec": {"volumes": [{"name": "l", "persistentVolumeClaim": {"claimName": "logs"}}]}},
    )
    create(t9k, "pytorch", "viewed", 60, "--tensorboard", "logs/mnist")

    def ready() -> bool:
        status = sdk.get("viewed").get("status") or {}
        return bool((status.get("tensorboard") or {}).get("ready"))

    wait_for(ready, 60, "the job's TensorBoard ready")
    described = t9k.ok("describe", "viewed")
    assert "TensorBoard:\n  viewed: ready\n" in described
    forward = t9k.background("tensorboard", "viewed", "--port", "0")
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        assert line.startswith("TensorBoard viewed: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        page = urllib.request.urlopen(url + "#scalars", timeout=30).read().decode()
        assert "TensorBoard stand-in: /" in page
        again = urllib.request.urlopen(url + "data/runs", timeout=30).read().decode()
        assert "TensorBoard stand-in: /data/runs" in again
    finally:
        forward.terminate()
        forward.communicate(timeout=30)
    proc = t9k("tensorboard", "nothing")
    assert proc.returncode == 1 and "not found" in proc.stderr


def test_completion_and_dry_run_need_no_cluster(tmp_path: Path) -> None:
    def t9k(*args: str) -> str:
        return subprocess.run([str(T9K), *args], capture_output=True, text=True, check=True).stdout

    script = t9k("completion", "bash")
    probe = 'COMP_WORDS=(t9k lo); COMP_CWORD=1; __t9k_complete; echo "${COMPREPLY[@]}"'
    completed = subprocess.run(["bash", "-c", f"{script}\n{probe}"], capture_output=True, text=True)
    assert completed.stdout.split() == ["logs"], completed.stderr
    flags = 'COMP_WORDS=(t9k logs --fo); COMP_CWORD=2; __t9k_complete; echo "${COMPREPLY[@]}"'
    completed = subprocess.run(["bash", "-c", f"{script}\n{flags}"], capture_output=True, text=True)
    assert completed.stdout.split() == ["--follow"], completed.stderr
    dry = ["create", "pytorch", "dry", "--image", "t:1", "--torchrun", "--gpus", "2", "--dry-run"]
    out = t9k("--kubeconfig", str(tmp_path / "none"), *dry, "--", "train.py")
    job = yaml.safe_load(out)
    assert job["spec"]["torchrunConfig"] == {"enabled": True, "procPerNode": "2"}
    PyTorchTrainingJobObject.from_dict(job)


# -- the SDK --------------------------------------------------------------------------


def test_sdk_create_from_a_model_get_list_wait_logs_and_typed_errors(
    sdk: Client, namespace: str
) -> None:
    model = PyTorchTrainingJobObject.from_dict(pytorch_manifest("from-model"))
    created = sdk.create(model)
    assert created["metadata"]["namespace"] == namespace
    with pytest.raises(AlreadyExists, match='"from-model" already exists'):
        sdk.create(model)
    invalid = pytorch_manifest("refused")
    invalid["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["bogus"] = 1
    with pytest.raises(Invalid) as refused:
        sdk.submit(invalid)
    field = '.spec.replicaSpecs[0].template.spec.containers[name="pytorch"].bogus'
    assert f"{field}: field not declared in schema" in str(refused.value)
    with pytest.raises(BadJob, match="invalid PyTorchTrainingJob"):
        sdk.create({**pytorch_manifest("x"), "spec": {"replicaSpecs": []}})
    assert [j["metadata"]["name"] for j in sdk.list()] == ["from-model"]
    job = sdk.wait("from-model", "Succeeded", timeout=60)
    assert sdk.parse(job).status.phase == "Succeeded"
    lines = list(sdk.logs("from-model", all_replicas=True))
    assert [(line.replica, line.pod, line.text) for line in lines] == [
        (f"worker-{i}", f"from-model-worker-{i}", text)
        for i in (0, 1)
        for text in log_lines(f"from-model-worker-{i}", "pytorch")
    ]
    sdk.submit(pytorch_manifest("failing", exit_code=2))
    with pytest.raises(JobFailed) as failed:
        sdk.wait("failing", "Succeeded", timeout=60)
    assert failed.value.reason
    sdk.submit(pytorch_manifest("long", run="120s"))
    with pytest.raises(WaitTimeout):
        sdk.wait("long", "Succeeded", timeout=1)
    container = {"name": "mindspore", "image": "m"}
    worker = {"replicas": 1, "template": {"spec": {"containers": [container]}}}
    sdk.submit(
        {
            "apiVersion": "mindspore.gitee.com/v1",
            "kind": "MSJob",
            "metadata": {"name": "ms"},
            "spec": {"msReplicaSpecs": {"Worker": worker}},
        }
    )
    with pytest.raises(Unsupported, match="cannot be paused"):
        sdk.pause("ms")
    sdk.delete("long")

    def gone() -> bool:
        try:
            sdk.get("long")
        except NotFound:
            return True
        return False

    wait_for(gone, 30, "the deleted job gone")


def test_the_sdk_example_in_the_docs_runs_as_written(cluster: Cluster, namespace: str) -> None:
    text = (Path(__file__).parents[2] / "docs" / "sdk.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", text, re.S)
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "NAMESPACE": namespace}
    proc = subprocess.run(
        [sys.executable, "-c", example], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"created PyTorchTrainingJob sdk-example in {namespace}"
    assert "sdk-example: Succeeded" in lines
    logged = lines[lines.index("sdk-example: Succeeded") + 1 :]
    assert logged == [
        line
        for i in (0, 1)
        for line in prefixed(f"worker-{i}", f"sdk-example-worker-{i}", "pytorch")
    ]
