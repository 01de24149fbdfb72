"""DeepSpeedJob end to end on the local cluster, the operator as its ServiceAccount."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from t9k_operator.api import deepspeed
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, SECRETS
from tests.integration.cluster import wait_for
from tests.integration.crd_helpers import DOC_FRAGMENTS, refused_for_nameless_container
from tests.integration.jobs import Jobs, in_phase, provide_claims, settled
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.unit.api.test_deepspeed_models import SPEC_EXAMPLES

pytestmark = pytest.mark.usefixtures("operator")

DEEPSPEED = resource_of(deepspeed.CRD)


def ds_job(
    name: str,
    replicas: int,
    *,
    manual: bool = True,
    config: Any = "default",
    policy: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": dict(MANUAL) if manual else {}},
            "spec": {"containers": [{"name": "worker", "image": "deepspeed/deepspeed:v072"}]},
        },
    }
    if policy:
        worker["restartPolicy"] = policy
    body: dict[str, Any] = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "DeepSpeedJob",
        "metadata": {"name": name},
        "spec": {"worker": worker, **spec},
    }
    if config == "default":
        config = {"run": {"python": "/t9k/mnt/train.py"}}
    if config is not None:
        body["spec"]["config"] = config
    return body


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, DEEPSPEED)


def hostfile(jobs: Jobs, name: str) -> str:
    cm = jobs.client.get(CONFIGMAPS, f"{name}-hostfile", jobs.namespace)
    return str(cm["data"]["hostfile"])


def launcher_line(jobs: Jobs, name: str) -> str:
    pod = wait_for(lambda: jobs.pods(name).get(f"{name}-worker-0"), 20, "worker-0")
    script = pod["spec"]["containers"][0]["command"][2]
    return str(script.rstrip().splitlines()[-1])


@pytest.mark.parametrize(("replicas", "slots"), [(1, 1), (1, 8), (4, 1), (4, 8)])
def test_hostfile_bytes(jobs: Jobs, replicas: int, slots: int) -> None:
    jobs.create(ds_job("hf", replicas, config={"slotsPerWorker": slots, "run": {"python": "t.py"}}))
    wait_for(lambda: jobs.pods("hf") and True, 20, "pods")
    expected = "".join(f"hf-worker-{i}.hf slots={slots}\n" for i in range(replicas))
    wait_for(lambda: hostfile(jobs, "hf") == expected, 10, "the hostfile")


@pytest.mark.parametrize(
    ("config", "line"),
    [
        (
            {"run": {"python": "train.py --x 1"}, "localRank": False},
            "exec deepspeed --hostfile=/t9k/hostfile --no_local_rank train.py --x 1",
        ),
        (
            {"run": {"module": "pkg.train"}, "autotune": "tune"},
            "exec deepspeed --hostfile=/t9k/hostfile --autotuning=tune --module pkg.train",
        ),
        (
            {
                "run": {"exec": ["./train", "-v"]},
                "autotune": "run",
                "otherArgs": ["--master_port=12346"],
            },
            "exec deepspeed --hostfile=/t9k/hostfile --autotuning=run --master_port=12346 "
            "--no_python ./train -v",
        ),
        (
            {"run": {"python": ["t.py"]}, "otherArgs": ["--master_port", "12346"]},
            "exec deepspeed --hostfile=/t9k/hostfile --master_port 12346 t.py",
        ),
    ],
)
def test_deepspeed_command(jobs: Jobs, config: dict[str, Any], line: str) -> None:
    jobs.create(ds_job("cmd", 2, config=config))
    assert launcher_line(jobs, "cmd") == line


CUSTOM = "deepspeed --hostfile=/t9k/hostfile --num_gpus=2 /t9k/mnt/train.py --lr 0.1"


def launcher_script(jobs: Jobs, name: str) -> str:
    pod = wait_for(lambda: jobs.pods(name).get(f"{name}-worker-0"), 20, "worker-0")
    return str(pod["spec"]["containers"][0]["command"][2])


@pytest.mark.parametrize("disable_env", [None, False, True])
def test_a_custom_command_and_the_environment_file(jobs: Jobs, disable_env: bool | None) -> None:
    spec = {} if disable_env is None else {"disableCustomEnv": disable_env}
    jobs.create(ds_job("cc", 2, config={"customCommand": CUSTOM, "slotsPerWorker": 2}, **spec))
    script = launcher_script(jobs, "cc")
    assert script.rstrip().splitlines()[-1] == f"exec /bin/bash -c '{CUSTOM}'"
    writes_env_file = ': > "/root/.deepspeed_env"' in script
    assert writes_env_file is (disable_env is not True)
    wait_for(
        lambda: hostfile(jobs, "cc") == "cc-worker-0.cc slots=2\ncc-worker-1.cc slots=2\n",
        10,
        "the hostfile of slotsPerWorker",
    )
    # The hostfile names the workers the job is to have; the pods come one by one.
    pods = jobs.wait_pods("cc", ["cc-worker-0", "cc-worker-1"])
    worker = pods["cc-worker-1"]["spec"]["containers"][0]["command"][2]
    assert worker.rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e"
    assert ".deepspeed_env" not in worker


def test_options_beside_a_custom_command_are_said_to_be_ignored(jobs: Jobs) -> None:
    config = {"customCommand": CUSTOM, "run": {"python": "t.py"}, "autotune": "tune"}
    jobs.create(ds_job("ccq", 1, config={"customCommand": CUSTOM}))  # nothing beside it
    jobs.create(ds_job("ccw", 1, config=config))
    event = jobs.wait_event("ccw", "FieldNotActedOn")
    assert event[0] == "Warning"
    assert event[2].startswith(
        "spec.config.run (spec.config.customCommand replaces it), "
        "spec.config.autotune (spec.config.customCommand replaces it): stored as written"
    ), event[2]
    assert launcher_script(jobs, "ccw").rstrip().endswith(f"exec /bin/bash -c '{CUSTOM}'")
    jobs.wait_event("ccq", "Created")
    assert all(e[1] != "FieldNotActedOn" for e in jobs.events("ccq"))


def test_ssh_secret_per_job_owned_and_copied_to_a_private_ssh_dir(jobs: Jobs) -> None:
    for name in ("ka", "kb"):
        jobs.create(ds_job(name, 2))
    secrets = {}
    for name in ("ka", "kb"):
        secret = wait_for(lambda n=name: _secret(jobs, f"{n}-ssh"), 20, f"{name}'s Secret")
        owner = secret["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("DeepSpeedJob", name, True)
        data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
        assert set(data) == {"id_ed25519", "id_ed25519.pub", "authorized_keys", "config"}
        assert data["authorized_keys"] == data["id_ed25519.pub"]
        secrets[name] = data["id_ed25519"]
    assert secrets["ka"] != secrets["kb"]
    pod = jobs.wait_pods("ka", ["ka-worker-0", "ka-worker-1"])["ka-worker-1"]
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert vols["t9k-ssh-key"]["secret"] == {"secretName": "ka-ssh", "defaultMode": 0o400}
    assert vols["t9k-ssh"]["emptyDir"]["medium"] == "Memory"
    mounts = {m["mountPath"]: m["name"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert {"/root/.ssh": "t9k-ssh", "/t9k/hostfile": "t9k-hostfile"}.items() <= mounts.items()
    setup = pod["spec"]["initContainers"][0]
    assert setup["name"] == "t9k-ssh-setup"
    setup_mounts = {m["mountPath"]: m["name"] for m in setup["volumeMounts"]}
    # (and the ServiceAccount token, which the API server adds to every container)
    want = {"/t9k/ssh-key": "t9k-ssh-key", "/root/.ssh": "t9k-ssh"}
    assert want.items() <= setup_mounts.items()


def _secret(jobs: Jobs, name: str) -> dict[str, Any] | None:
    items, _ = jobs.client.list_all(SECRETS, jobs.namespace)
    return next((s for s in items if s["metadata"]["name"] == name), None)


def test_success_follows_worker_zero(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    jobs.create(ds_job("ok", 2, runPolicy={"cleanUpPolicy": "Unfinished"}))
    pods = jobs.wait_pods("ok", ["ok-worker-0", "ok-worker-1"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase("ok", "Running")
    kubelet.succeed(jobs.namespace, "ok-worker-0")
    jobs.wait_phase("ok", "Succeeded")
    settled(jobs, "ok", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert set(jobs.pods("ok")) == {"ok-worker-0"}, "sshd workers cleaned up"


@pytest.mark.parametrize("failing", ["fl-worker-0", "fl-worker-1"])
def test_failure_of_any_worker_fails_the_job_at_once(
    jobs: Jobs, kubelet: Kubelet, failing: str
) -> None:
    jobs.create(ds_job("fl", 2, policy="Never"))
    pods = jobs.wait_pods("fl", ["fl-worker-0", "fl-worker-1"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.fail(jobs.namespace, failing, exit_code=2)
    jobs.wait_phase("fl", "Failed")
    failed = jobs.condition("fl", "Failed")
    assert failed is not None and failing in failed["message"]


def test_pause_resume_and_config_less_debug(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(ds_job("dbg", 2, config=None, runMode={"debug": {"enabled": True}}))
    pods = jobs.wait_pods("dbg", ["dbg-worker-0", "dbg-worker-1"])
    debug_command = pods["dbg-worker-0"]["spec"]["containers"][0]["command"]
    assert debug_command[2].rstrip().endswith("exec /usr/sbin/sshd -D -e")
    jobs.create(ds_job("pz", 2))
    jobs.wait_pods("pz", ["pz-worker-0", "pz-worker-1"])
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": True}}})
    jobs.wait_phase("pz", "Paused")
    wait_for(lambda: not jobs.pods("pz"), 10, "pods deleted while paused")
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": False}}})
    jobs.wait_pods("pz", ["pz-worker-0", "pz-worker-1"])


def test_the_t9k_debug_example_with_an_empty_run_is_accepted_and_debugs(jobs: Jobs) -> None:
    """The T9k team's public debug examples say `run: {python: []}`."""
    jobs.create(
        ds_job(
            "dbgx",
            2,
            config={"slotsPerWorker": 1, "run": {"python": []}},
            runMode={"debug": {"enabled": True}},
        )
    )
    pods = jobs.wait_pods("dbgx", ["dbgx-worker-0", "dbgx-worker-1"])
    for pod in pods.values():
        command = pod["spec"]["containers"][0]["command"]
        assert command[2].rstrip().endswith("exec /usr/sbin/sshd -D -e")


def test_elastic_scaling_moves_the_hostfile(jobs: Jobs, cluster: Any) -> None:
    jobs.create(
        ds_job(
            "el",
            2,
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2},
        )
    )
    jobs.wait_pods("el", ["el-worker-0", "el-worker-1"])
    cluster.kubectl("scale", "deepspeedjob/el", "--replicas=3", "-n", jobs.namespace)
    jobs.wait_pods("el", ["el-worker-0", "el-worker-1", "el-worker-2"])
    wait_for(lambda: hostfile(jobs, "el").count("slots=1\n") == 3, 10, "hostfile of 3")


def test_seed_example_runs_to_the_end(jobs: Jobs) -> None:
    body = ds_job(
        "deepspeed-example",
        4,
        manual=False,
        config={"slotPerWorker": 1, "run": {"python": "/t9k/mnt/train.py"}},
    )
    jobs.create(body)
    jobs.wait_phase("deepspeed-example", "Succeeded", 60)


@pytest.mark.parametrize("example", sorted(SPEC_EXAMPLES))
def test_every_seed_example_runs(jobs: Jobs, example: str) -> None:
    body = yaml.safe_load(SPEC_EXAMPLES[example])
    provide_claims(jobs, body["spec"]["worker"]["template"])
    if example in DOC_FRAGMENTS:
        body = refused_for_nameless_container(jobs.create, body)
    jobs.create(body)
    name = body["metadata"]["name"]
    mode = body["spec"].get("runMode") or {}
    containers = body["spec"]["worker"]["template"]["spec"]["containers"]
    if not all(c.get("image") for c in containers):
        jobs.wait_phase(name, "Failed", 30)  # the doc's fragment names no image
        failed = jobs.condition(name, "Failed")
        assert failed is not None and "image: Required value" in failed["message"]
    elif (mode.get("pause") or {}).get("enabled"):
        jobs.wait_phase(name, "Paused", 30)
    elif (mode.get("debug") or {}).get("enabled"):
        jobs.wait_phase(name, "Running", 30)
    else:
        jobs.wait_phase(name, "Succeeded", 60)


@pytest.mark.parametrize(
    ("policy", "left"),
    [("None", {"cl-worker-0", "cl-worker-1"}), ("All", set()), ("Unfinished", {"cl-worker-0"})],
)
def test_cleanup_policies(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, policy: str, left: set[str]
) -> None:
    jobs.create(ds_job("cl", 2, runPolicy={"cleanUpPolicy": policy}))
    pods = jobs.wait_pods("cl", ["cl-worker-0", "cl-worker-1"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.succeed(jobs.namespace, "cl-worker-0")
    jobs.wait_phase("cl", "Succeeded")
    # The cleanup pass has run and the pods it deleted are gone: what is left stays.
    settled(jobs, "cl", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert set(jobs.pods("cl")) == left
