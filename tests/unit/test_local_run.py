"""Local run (``t9k run --local``, here ``python -m t9k_operator.local``): every
sample's replicas run for real as local processes with a stand-in program
that checks their environment is coherent (hack/local/rendezvous.py); each
kind's rule decides the exit code; Ctrl-C and the end of a job leave no
process behind. No cluster; a few seconds in all."""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kinds import registry
from t9k_operator.kinds.contract import JobKind
from t9k_operator.local import LocalRunError, add_arguments, main, plan, run
from t9k_operator.local.cli import prepare
from t9k_operator.local.rewrite import Rewriter
from t9k_operator.local.runner import Runner
from tests.kinds import ALL, kind_table

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "manifests" / "samples").glob("*.yaml"))
RENDEZVOUS = str(ROOT / "hack" / "local" / "rendezvous.py")
STAND_IN = [sys.executable, RENDEZVOUS]

EXPECTED = {data.SAMPLE: data.LOCAL_PROCESSES for data in ALL} | {
    name: processes
    for more in kind_table("MORE_SAMPLES").values()
    for name, processes in more.items()
}
"""The processes each sample runs locally (its kind's ``LOCAL_PROCESSES``, a further
sample's in its kind's ``MORE_SAMPLES``): one per
replica (PyTorch, MSJob), one per rank a launcher would start (DeepSpeed's 4 workers
x 1 slot, ColossalAI's 2 workers x 1 process; the workers' sshd and the launcher are
not processes)."""


def sample(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "manifests" / "samples" / name).read_text()))


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def pids(output: str) -> list[int]:
    return [int(p) for p in re.findall(r"^\[[^]]+\] replica \S+ pid (\d+):", output, re.M)]


def test_the_samples_cover_every_kind() -> None:
    kinds = {sample(p.name)["kind"] for p in SAMPLES}
    assert kinds == {kind.crd.kind for kind in registry.KINDS}
    assert {p.name for p in SAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda k: k.crd.kind)
@pytest.mark.parametrize("program", [[], ["python", "train.py"], ["./train.sh"]])
def test_every_kind_says_what_runs_locally(kind: JobKind[Any], program: list[str]) -> None:
    # Every registered kind has the local runner's hook, and its sample plans
    # (a dry run), with its own program and with one given after `--`.
    assert callable(kind.local.program) and callable(kind.local.launch)
    paths = [p for p in SAMPLES if sample(p.name)["kind"] == kind.crd.kind]
    assert paths, f"no sample of {kind.crd.kind} in manifests/samples"
    for path in paths:
        out, err = io.StringIO(), io.StringIO()
        assert run(path, program, dry_run=True, out=out, err=err) == 0, err.getvalue()
        assert out.getvalue().startswith("[") and "  command: " in out.getvalue()


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_sample_meets_at_its_master_with_one_world_size(path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "t9k_operator.local", str(path), "--", *STAND_IN],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    labels = EXPECTED[path.name]
    n = len(labels)
    for label in labels:
        # Every replica reached the master and heard that all n agree on the world.
        assert f"[{label}] rendezvous ok: {n} replicas agree" in proc.stdout, proc.stdout
    masters = set(re.findall(r"master (\S+):", proc.stdout))
    assert masters == {"127.0.0.1"}
    ports = set(re.findall(r"master 127\.0\.0\.1:(\d+)", proc.stdout))
    assert len(ports) == 1 and ports != {"23456"} and ports != {"29500"}
    assert "the job succeeded" in proc.stderr
    assert not [p for p in pids(proc.stdout) if alive(p)]


def run_job(manifest: dict[str, Any], *args: str, grace: float = 0.2) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(manifest, [*STAND_IN, *args], grace=grace, stop_timeout=2, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("name", "args", "code", "said"),
    [
        # PyTorch: the master (worker-0) decides; the others still running are stopped.
        ("pytorch-basic.yaml", ["--then", "hang", "--exit", "0", "0"], 0, "job succeeded"),
        # ... and any replica failing fails the job with its code.
        ("pytorch-basic.yaml", ["--then", "hang", "--exit", "2", "3"], 3, "worker-2 failed"),
        ("pytorch-basic.yaml", ["--then", "hang", "--exit", "0", "5"], 5, "worker-0 failed"),
        # DeepSpeed: a rank failing fails worker-0's launcher with its code.
        ("deepspeed-basic.yaml", ["--then", "hang", "--exit", "3", "7"], 7, "worker-3 failed"),
        # ColossalAI: the launcher exits 1 whichever host failed.
        ("colossalai-basic.yaml", ["--then", "hang", "--exit", "1", "4"], 1, "worker-1 failed"),
        # MSJob, successPolicy AllWorkers: every Worker succeeded; the scheduler is stopped.
        (
            "msjob-basic.yaml",
            ["--then", "hang", "--exit", "worker-0", "0", "--exit", "worker-1", "0"],
            0,
            "stopping scheduler-0",
        ),
        ("msjob-basic.yaml", ["--then", "hang", "--exit", "scheduler-0", "2"], 2, "failed"),
        # TensorFlow: worker 0 (no chief) decides; any replica failing fails the job.
        ("tensorflow-basic.yaml", ["--then", "hang", "--exit", "0", "0"], 0, "job succeeded"),
        ("tensorflow-basic.yaml", ["--then", "hang", "--exit", "3", "6"], 6, "worker-3 failed"),
    ],
)
def test_the_kinds_rule_decides_the_exit_code(
    name: str, args: list[str], code: int, said: str
) -> None:
    got, out, err = run_job(sample(name), *args)
    assert got == code, out + err
    assert said in err
    started = pids(out)
    assert len(started) == len(EXPECTED[name])
    assert not [p for p in started if alive(p)]


def test_msjob_default_success_policy_is_worker_0() -> None:
    job = sample("msjob-basic.yaml")
    del job["spec"]["successPolicy"]
    got, out, err = run_job(job, "--then", "hang", "--exit", "worker-0", "0")
    assert got == 0, out + err
    assert "stopping scheduler-0, worker-1" in err


@pytest.fixture
def hanging_msjob(tmp_path: Path) -> Iterator[tuple[Runner, threading.Thread, list[int]]]:
    """The MSJob sample (AllWorkers) with Worker 0 done and the others waiting."""
    job = prepare(
        sample("msjob-basic.yaml"),
        [*STAND_IN, "--then", "hang", "--exit", "worker-0", "0"],
        run_dir=str(tmp_path),
    )
    out = io.StringIO()
    runner = Runner(job, out=out, err=io.StringIO(), stop_timeout=2)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(runner.run()))
    thread.start()
    yield runner, thread, codes
    runner.interrupt()
    thread.join(timeout=10)


def test_all_workers_waits_for_every_worker_and_an_interrupt_stops_them(
    hanging_msjob: tuple[Runner, threading.Thread, list[int]],
) -> None:
    runner, thread, codes = hanging_msjob
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        children = runner.children
        if len(children) == 3 and children[1].code == 0:
            break
        time.sleep(0.05)
    assert [c.code for c in runner.children] == [None, 0, None]  # Worker 0 alone is not enough
    time.sleep(0.5)
    assert thread.is_alive()
    runner.interrupt(signal.SIGINT)
    thread.join(timeout=10)
    assert codes == [130]
    assert not [c.popen.pid for c in runner.children if alive(c.popen.pid)]


def test_ctrl_c_stops_every_replica_and_leaves_no_orphan() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "t9k_operator.local",
            str(ROOT / "manifests/samples/pytorch-basic.yaml"),
            "--",
            *STAND_IN,
            "--then",
            "hang",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while sum("waiting for a signal" in line for line in seen) < 4:
        assert time.monotonic() < deadline, seen
        seen.append(proc.stdout.readline())
    started = pids("".join(seen))
    assert len(started) == 4 and all(alive(p) for p in started)
    proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends the runner
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "SIGINT: stopping every replica" in err
    assert not [p for p in started if alive(p)]


# -- the plan: what each replica gets -------------------------------------------------------


def free_ports() -> Any:
    counter = iter(range(40000, 41000))
    return lambda: next(counter)


TORCHRUN = yaml.safe_load(
    """
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: tr}
spec:
  torchrunConfig: {enabled: true, procPerNode: "2", rdzvBackend: c10d}
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: x
          args: [train.py, --epochs, "$(EPOCHS)"]
          env:
          - {name: EPOCHS, value: "3"}
          - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
          - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
          - {name: TOKEN, valueFrom: {secretKeyRef: {name: s, key: k}}}
          - {name: PEER, value: "tr-worker-0.tr.default.svc.cluster.local:29400 $$(EPOCHS)"}
  - type: worker
    replicas: 1
    template:
      spec:
        containers:
        - {name: pytorch, image: x, args: [train.py]}
"""
)


def test_torchrun_gets_a_local_rendezvous_endpoint_and_kubelet_resolution() -> None:
    job = plan(TORCHRUN, "/run", free_ports())
    master, worker = job.processes
    assert master.label == "master-0" and worker.label == "worker-0"
    endpoint = "--rdzv-endpoint=127.0.0.1:40001"  # c10d's 29400 (after the master port)
    assert master.argv == (
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=2",
        "--rdzv-backend=c10d",
        endpoint,
        "--rdzv-id=local-tr",
        "train.py",
        "--epochs",
        "3",
    )
    assert endpoint in worker.argv
    env = master.env
    assert env["POD"] == "tr-master-0" and env["IP"] == "127.0.0.1"
    assert env["PEER"] == "127.0.0.1:40001 $(EPOCHS)"  # the name, the port; $$ is a $
    assert "TOKEN" not in env
    assert any("TOKEN is left unset (secretKeyRef s/k" in n for n in job.notes)


def test_a_program_replaces_the_script_torchrun_runs() -> None:
    job = plan(TORCHRUN, "/run", free_ports(), program=["python", "debug.py", "-v"])
    assert job.processes[0].argv[-2:] == ("debug.py", "-v")
    job = plan(TORCHRUN, "/run", free_ports(), program=["./run.sh"])
    assert job.processes[1].argv[-2:] == ("--no-python", "./run.sh")


def test_pytorch_plain_ranks_follow_the_builders() -> None:
    manifest = sample("pytorch-basic.yaml")
    manifest["spec"]["replicaSpecs"].insert(
        0, copy.deepcopy(manifest["spec"]["replicaSpecs"][0]) | {"type": "master", "replicas": 1}
    )
    job = plan(manifest, "/run", free_ports())
    ranks = {p.label: (p.env["RANK"], p.env["WORLD_SIZE"]) for p in job.processes}
    assert ranks["master-0"] == ("0", "5") and ranks["worker-0"] == ("1", "5")
    assert {p.env["MASTER_ADDR"] for p in job.processes} == {"127.0.0.1"}
    assert {p.env["MASTER_PORT"] for p in job.processes} == {"40000"}
    assert job.processes[0].argv == ("python", "dist_mnist.py")


def test_deepspeed_ranks_get_worker_0s_env_and_the_hostfile_locally() -> None:
    manifest = sample("deepspeed-basic.yaml")
    manifest["spec"]["config"] |= {"slotsPerWorker": 2, "localRank": False}
    manifest["spec"]["config"]["run"] = {"python": "train.py --data /t9k/hostfile"}
    container = manifest["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "FOO", "value": "bar"},
        {"name": "T9K_SSH_WAIT_TIMEOUT", "value": "9"},
    ]
    job = plan(manifest, "/run", free_ports(), python="py")
    assert [p.label for p in job.processes][:3] == ["worker-0:0", "worker-0:1", "worker-1:0"]
    third = job.processes[2]
    assert third.argv == (
        "py",
        "-u",
        "train.py",
        "--data",
        "/run/configmaps/deepspeed-example-hostfile/hostfile",
    )
    assert {k: third.env[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "CROSS_RANK")} == {
        "RANK": "2",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "8",
        "CROSS_RANK": "1",
    }
    assert third.env["FOO"] == "bar" and "T9K_SSH_WAIT_TIMEOUT" not in third.env
    assert {p.replica for p in job.processes} == {("worker", 0)}
    assert job.files[".deepspeed_env"] == "FOO=bar\n"
    hostfile = job.files["configmaps/deepspeed-example-hostfile/hostfile"]
    assert hostfile.splitlines()[0] == "deepspeed-example-worker-0.deepspeed-example slots=2"
    assert any("no sshd" in n for n in job.notes)


def test_colossalai_ranks_number_as_torchrun_does() -> None:
    manifest = sample("colossalai-basic.yaml")
    manifest["spec"]["worker"]["procPerWorker"] = 2
    manifest["spec"]["launcher"]["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}]
    job = plan(manifest, "/run", free_ports(), python="py")
    last = job.processes[-1]
    assert last.label == "worker-1:1" and last.argv == ("py", "-u", "train.py", "arg1")
    assert (last.env["RANK"], last.env["LOCAL_RANK"], last.env["GROUP_RANK"]) == ("3", "1", "1")
    assert last.env["WORLD_SIZE"] == "4" and last.env["NCCL_DEBUG"] == "INFO"
    assert job.failed_exit_code == 1


def test_msjob_roles_reach_the_scheduler_locally() -> None:
    job = plan(sample("msjob-basic.yaml"), "/run", free_ports())
    hosts = {p.label: (p.env["MS_ROLE"], p.env["MS_SCHED_HOST"]) for p in job.processes}
    assert hosts == {
        "scheduler-0": ("MS_SCHED", "127.0.0.1"),
        "worker-0": ("MS_WORKER", "127.0.0.1"),
        "worker-1": ("MS_WORKER", "127.0.0.1"),
    }
    assert {p.env["MS_SCHED_PORT"] for p in job.processes} == {"40000"}


def test_tensorflow_tasks_each_listen_on_a_port_of_their_own_locally() -> None:
    manifest = sample("tensorflow-basic.yaml")
    workers = manifest["spec"]["replicaSpecs"][0]
    workers["replicas"] = 2
    container = workers["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "STEPS", "value": "3"}]
    container["args"] = ["--steps=$(STEPS)"]
    more = [copy.deepcopy(workers) for _ in range(3)]
    for rs, type_ in zip(more, ("chief", "ps", "evaluator"), strict=True):
        rs.update(type=type_, replicas=1)
    manifest["spec"]["replicaSpecs"] += more
    job = plan(manifest, "/run", free_ports())
    configs = {p.label: json.loads(p.env["TF_CONFIG"]) for p in job.processes}
    cluster = configs["chief-0"]["cluster"]
    addresses = [a for tasks in cluster.values() for a in tasks]
    assert sorted(cluster) == ["chief", "ps", "worker"] and len(addresses) == 4
    assert len(set(addresses)) == 4 and all(a.startswith("127.0.0.1:") for a in addresses)
    assert {str(c["cluster"]) for c in configs.values()} == {str(cluster)}
    assert configs["evaluator-0"]["task"] == {"type": "evaluator", "index": 0}
    assert configs["worker-1"]["task"] == {"type": "worker", "index": 1}
    assert {p.replica for p in job.processes} == {
        ("worker", 0), ("worker", 1), ("chief", 0), ("ps", 0), ("evaluator", 0)
    }  # fmt: skip
    assert all(p.argv[-1] == "--steps=3" for p in job.processes)  # kubelet's $(STEPS)
    container.pop("command")
    with pytest.raises(LocalRunError, match="worker-0: the container gives no command"):
        plan(manifest, "/run", free_ports())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(apiVersion="batch.tensorstack.dev/v1"), "apiVersion"),
        (lambda m: m.update(kind="TensorBoard"), "not a job kind"),
        (
            lambda m: m["spec"].update(runMode={"debug": {"enabled": True}}),
            "remove runMode",
        ),
        (
            lambda m: m["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0].pop(
                "command"
            ),
            "gives no command",
        ),
    ],
)
def test_what_cannot_run_locally_is_said(change: Any, message: str) -> None:
    manifest = sample("pytorch-basic.yaml")
    change(manifest)
    with pytest.raises(LocalRunError, match=message):
        plan(manifest, "/run", free_ports())


def test_the_cli_says_why_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "two.yaml"
    bad.write_text(
        (ROOT / "manifests/samples/pytorch-basic.yaml").read_text()
        + "\n---\n"
        + (ROOT / "manifests/samples/msjob-basic.yaml").read_text()
    )
    proc = subprocess.run(
        [sys.executable, "-m", "t9k_operator.local", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ},
    )
    assert proc.returncode == 2
    assert "holds 2 jobs" in proc.stderr


@pytest.mark.parametrize(
    ("text", "local"),
    [
        ("j-worker-0.j:23456", "127.0.0.1:4000"),
        ("j-worker-0.j.ns.svc.cluster.local:23456", "127.0.0.1:4000"),
        ("tcp://j-worker-0.j.ns:29400,x", "tcp://127.0.0.1:29400,x"),
        ("j-worker-0.j.elsewhere", "j-worker-0.j.elsewhere"),  # another domain
        ("xj-worker-0.j", "xj-worker-0.j"),
        ("j.ns.svc", "127.0.0.1"),  # a Service's bare name: with its namespace,
        ("j:23456", "127.0.0.1:4000"),  # or a port,
        ("/data/j/out", "/data/j/out"),  # not as a word of a path
        ("--master_port=23456", "--master_port=4000"),
        ("--hostfile=/t9k/hostfile", "--hostfile=/run/hostfile"),
        ("/t9k/hostfile2", "/t9k/hostfile2"),
    ],
)
def test_names_ports_and_paths_become_this_machines(text: str, local: str) -> None:
    rewriter = Rewriter(
        ["j-worker-0.j"], "ns", {23456: 4000}, ["j"], {"/t9k/hostfile": "/run/hostfile"}
    )
    assert rewriter.text(text) == local


def test_the_runs_files_are_written_where_the_ranks_look(tmp_path: Path) -> None:
    manifest = sample("deepspeed-basic.yaml")
    manifest["spec"]["config"]["run"] = {"exec": ["cat", "/t9k/hostfile"]}
    job = prepare(manifest, run_dir=str(tmp_path))
    hostfile = Path(job.processes[0].argv[-1])
    assert hostfile.is_relative_to(tmp_path)
    assert hostfile.read_text().count(" slots=1\n") == 4
    assert (tmp_path / ".deepspeed_env").exists()


def test_the_t9k_cli_can_take_the_options_and_main(capsys: pytest.CaptureFixture[str]) -> None:
    # As `t9k run --local FILE -- COMMAND` will parse them: a subcommand's parser.
    parser = argparse.ArgumentParser(prog="t9k")
    runs = parser.add_subparsers(dest="command").add_parser("run")
    runs.add_argument("--local", action="store_true")
    add_arguments(runs)
    sample_file = str(ROOT / "manifests/samples/colossalai-basic.yaml")
    args = parser.parse_args(["run", "--local", "--grace", "0", sample_file, "--", *STAND_IN])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "[worker-1] rendezvous ok: 2 replicas agree" in out


def test_a_launcher_kind_notes_only_what_its_ranks_miss() -> None:
    manifest = sample("deepspeed-basic.yaml")
    container = manifest["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    job = plan(manifest, "/run", free_ports())
    # The ranks get worker-0's env (.deepspeed_env): one note, not one per worker.
    assert [n for n in job.notes if "KEY" in n] == [
        "worker-0: KEY is left unset (secretKeyRef s/k needs the cluster); "
        "export it in this shell to give it a value"
    ]


def test_the_stand_in_notices_replicas_that_disagree_on_the_world() -> None:
    # Without the runner: rank 1 believes in a world of 3, the master in one of 2.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    master = subprocess.Popen(
        STAND_IN,
        env={**env, "RANK": "0", "WORLD_SIZE": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    other = subprocess.run(
        STAND_IN,
        env={**env, "RANK": "1", "WORLD_SIZE": "3"},
        capture_output=True,
        text=True,
        timeout=40,
    )
    _, master_err = master.communicate(timeout=40)
    assert master.returncode == 1 and other.returncode == 1
    assert "replica 1 sees world=3, the master world=2" in master_err
    assert "rendezvous failed" in other.stderr


def test_mpijob_runs_mpirun_here_one_rank_per_worker() -> None:
    manifest = sample("mpijob-basic.yaml")
    container = manifest["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}]
    job = plan(manifest, "/run", free_ports())
    (launcher,) = job.processes
    assert launcher.label == "launcher" and launcher.replica == ("launcher", 0)
    assert launcher.argv == (
        "mpirun",
        "--oversubscribe",
        "-np",
        "5",
        "--mca",
        "btl",
        "^openib",
        "-x",
        "PATH",
        "-x",
        "NCCL_DEBUG",
        "./random_walk",
        "20",
        "40",
        "2",
    )
    env = launcher.env
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert env["NCCL_DEBUG"] == "INFO" and env["MASTER_ADDR"] == "127.0.0.1"
    assert any("mpirun arguments not applied locally: -N 3" in n for n in job.notes)
