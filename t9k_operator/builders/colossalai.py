"""ColossalAIJob builders: worker pods running sshd, and the launcher pod.

Workers run only sshd (``spec.ssh.sshdPath``) with the job key at
``spec.ssh.authMountPath``. The launcher pod ``<job>-launcher`` is built by
the operator from ``spec.launcher`` (image, workingDir, env, resources): it
waits (bounded) until every worker answers ssh, then ``exec``s
``colossalai run`` on the hostfile, worker-0 as master, so its exit code is
the job's. The hostfile holds bare host names, one per worker.

Neither workers nor the launcher are ever restarted: a worker that comes
back cannot rejoin a running ``colossalai run`` (seed 003), and a rerun
launcher would start training from scratch on workers that may still be busy.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from t9k_operator.builders import ssh
from t9k_operator.builders.common import (
    NORMAL,
    PodMode,
    child_metadata,
    headless_service,
    pod_name,
    replica_labels,
    replica_pod,
    training_container_index,
)
from t9k_operator.objects import Obj

TRAINING_CONTAINERS = ("worker",)
DEBUG_COMMAND = ("sleep", "inf")
HOSTFILE_PATH = ssh.HOSTFILE_PATH
MASTER_PORT = 29500
DEFAULT_SSHD = "/usr/sbin/sshd"


def launcher_name(job_name: str) -> str:
    return f"{job_name}-launcher"


def _spec(job: Mapping[str, Any]) -> Obj:
    return dict(job.get("spec") or {})


def auth_dir(job: Mapping[str, Any]) -> str:
    return str((_spec(job).get("ssh") or {}).get("authMountPath") or ssh.DEFAULT_AUTH_DIR)


def sshd_path(job: Mapping[str, Any]) -> str:
    return str((_spec(job).get("ssh") or {}).get("sshdPath") or DEFAULT_SSHD)


def worker(job: Mapping[str, Any]) -> Obj:
    return dict(_spec(job).get("worker") or {})


def worker_count(job: Mapping[str, Any]) -> int:
    return int(worker(job).get("replicas", 1))


def hostfile(job: Mapping[str, Any]) -> str:
    name = job["metadata"]["name"]
    return "".join(f"{pod_name(name, 'worker', i)}.{name}\n" for i in range(worker_count(job)))


def hostfile_configmap(job: Mapping[str, Any]) -> Obj:
    return ssh.hostfile_configmap(job, hostfile(job))


def extra_launch_args(torch_args: Sequence[str]) -> str:
    """torchrun flags (``--max_restarts=3``, ``--flag``, ``--k v``) as ColossalAI's
    ``--extra_launch_args`` value ``k=v,flag``."""
    items: list[str] = []
    args = [str(a) for a in torch_args]
    i = 0
    while i < len(args):
        key = args[i].lstrip("-")
        if "=" in key:
            items.append(key)
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            items.append(f"{key}={args[i + 1]}")
            i += 1
        else:
            items.append(key)
        i += 1
    return ",".join(items)


def colossalai_command(job: Mapping[str, Any]) -> list[str]:
    name = job["metadata"]["name"]
    w = worker(job)
    cmd = [
        "colossalai",
        "run",
        f"--nproc_per_node={int(w.get('procPerWorker') or 1)}",
        f"--hostfile={HOSTFILE_PATH}",
        f"--master_addr={pod_name(name, 'worker', 0)}.{name}",
        f"--master_port={MASTER_PORT}",
    ]
    if w.get("torchArgs"):
        cmd.append(f"--extra_launch_args={extra_launch_args(w['torchArgs'])}")
    cmd.extend(str(c) for c in w.get("command") or [])
    return cmd


def launcher_script(job: Mapping[str, Any]) -> str:
    """The launcher container's script (bash): check the image, wait until
    every worker answers ssh, then ``exec`` colossalai. The wait's settings can
    be changed by T9K_* variables in the pod's env."""
    auth = auth_dir(job)
    lines = [
        "set -eu",
        *ssh.wait_settings_lines(),
        *ssh.require_command_lines("colossalai", "the launcher runs training with colossalai run"),
        *ssh.require_command_lines(
            "ssh", "the launcher checks every worker with the OpenSSH client"
        ),
        "# ssh and colossalai (Fabric) read ~/.ssh: point it at the job key.",
        f'if [ "{auth}" != "$HOME/.ssh" ] && [ ! -e "$HOME/.ssh" ]; then'
        f' ln -s {shlex.quote(auth)} "$HOME/.ssh"; fi',
        *ssh.wait_for_hosts_lines(),
        "exec " + " ".join(shlex.quote(a) for a in colossalai_command(job)),
    ]
    return "\n".join(lines) + "\n"


def worker_command(job: Mapping[str, Any]) -> list[str]:
    auth = auth_dir(job)
    opts = (
        ""
        if auth == ssh.DEFAULT_AUTH_DIR
        else (f" -o AuthorizedKeysFile={shlex.quote(auth)}/authorized_keys")
    )
    return ["/bin/sh", "-c", ssh.sshd_foreground_script(sshd_path(job), opts)]


def build_worker(
    job: Mapping[str, Any],
    index: int,
    mode: PodMode = NORMAL,
) -> Obj:
    template = worker(job).get("template") or {}
    if mode.command is None:
        mode = replace(mode, command=tuple(worker_command(job)))
    pod = replica_pod(
        job, template, "worker", index, training_names=TRAINING_CONTAINERS, mode=mode, role="worker"
    )
    containers = pod["spec"].get("containers") or []
    if containers:
        c = containers[training_container_index(template, TRAINING_CONTAINERS)]
        ssh.add_ssh_auth(pod, c, c, auth_dir(job), needs_bash=False)
    return pod


def build_launcher(job: Mapping[str, Any], mode: PodMode = NORMAL) -> Obj:
    command, args = mode.command, mode.args
    name = job["metadata"]["name"]
    spec = dict(_spec(job).get("launcher") or {})
    container: Obj = {
        "name": "launcher",
        "image": spec.get("image"),
        "command": list(command)
        if command is not None
        else ["/bin/bash", "-c", launcher_script(job)],
    }
    if args is not None:
        container["args"] = list(args)
    for key in ("workingDir", "env", "resources"):
        if spec.get(key):
            container[key] = copy.deepcopy(spec[key])
    container["volumeMounts"] = [ssh.hostfile_mount()]
    # The launcher carries the worker template's labels and annotations, so
    # whatever selects the job's pods (sidecar injection, queues) sees it too.
    template_meta = (worker(job).get("template") or {}).get("metadata") or {}
    labels = {
        **(template_meta.get("labels") or {}),
        **replica_labels(job["kind"], name, "launcher", 0, "launcher"),
    }
    meta = child_metadata(job, launcher_name(name), labels)
    if template_meta.get("annotations"):
        meta["annotations"] = dict(template_meta["annotations"])
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "hostname": launcher_name(name),
            "subdomain": name,
            "restartPolicy": "Never",
            "containers": [container],
            "volumes": [ssh.hostfile_volume(name)],
        },
    }
    ssh.add_ssh_auth(pod, container, spec, auth_dir(job), needs_bash=True)
    return pod


def build_service(job: Mapping[str, Any]) -> Obj:
    return headless_service(job, [("ssh", 22), ("master", MASTER_PORT)])
