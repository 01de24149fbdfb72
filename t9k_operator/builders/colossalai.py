"""ColossalAIJob builders: worker pods running sshd, and the launcher pod.

Workers run only sshd (``spec.ssh.sshdPath``) with the job key at
``spec.ssh.authMountPath``. The launcher pod ``<job>-launcher`` is built by
the operator from ``spec.launcher`` (image, workingDir, env, resources), or,
in the 2025 layout, from the launcher entry's pod template (its container
named ``launcher``, added with the workers' image when it has none): it
waits (bounded) until every worker answers ssh, then ``exec``s
``colossalai run`` on the hostfile, worker-0 as master, so its exit code is
the job's. The hostfile holds bare host names, one per worker.

Neither workers nor the launcher are ever restarted: a worker that comes
back cannot rejoin a running ``colossalai run`` (seed 003), and a rerun
launcher would start training from scratch on workers that may still be busy.
Both layouts are read through the spec's one view (``spec.workers``,
``spec.launcher_template``).
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Sequence
from dataclasses import replace

from t9k_operator.api.colossalai import (
    TRAINING_CONTAINER,
    ColossalAIJobObject,
    training_container,
)
from t9k_operator.api.template import named_container
from t9k_operator.builders import ssh
from t9k_operator.builders.common import (
    DEFAULT_CONTAINER,
    NORMAL,
    KindFacts,
    PodMode,
    child_metadata,
    headless_service,
    pod_name,
    replica_labels,
    replica_pod,
)
from t9k_operator.objects import Obj, training_container_index

Job = ColossalAIJobObject

TRAINING_CONTAINERS = (TRAINING_CONTAINER,)
"""The worker's training container: the one of this name, else the template's first."""
LAUNCHER = "launcher"
"""The launcher pod's container, which runs ``colossalai run`` (its exit decides)."""
DEBUG_COMMAND = ("sleep", "inf")
"""What each replica runs in debug mode unless runMode.debug says otherwise."""
FACTS = KindFacts((*TRAINING_CONTAINERS, LAUNCHER), DEBUG_COMMAND)
HOSTFILE_PATH = ssh.HOSTFILE_PATH
MASTER_PORT = 29500


def launcher_name(job_name: str) -> str:
    return f"{job_name}-launcher"


def auth_dir(job: Job) -> str:
    return job.spec.ssh.auth_mount_path


def hostfile(job: Job) -> str:
    return ssh.workers_hostfile(job.name, job.spec.workers.replicas)


def hostfile_configmap(job: Job) -> Obj:
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


def colossalai_command(job: Job) -> list[str]:
    name = job.name
    w = job.spec.workers
    cmd = [
        "colossalai",
        "run",
        f"--nproc_per_node={w.proc_per_worker}",
        f"--hostfile={HOSTFILE_PATH}",
        f"--master_addr={pod_name(name, 'worker', 0)}.{name}",
        f"--master_port={MASTER_PORT}",
    ]
    if w.torch_args:
        cmd.append(f"--extra_launch_args={extra_launch_args(w.torch_args)}")
    cmd.extend(w.command or [])
    return cmd


def launcher_script(job: Job) -> str:
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


def worker_command(job: Job) -> list[str]:
    auth = auth_dir(job)
    opts = (
        ""
        if auth == ssh.DEFAULT_AUTH_DIR
        else (f" -o AuthorizedKeysFile={shlex.quote(auth)}/authorized_keys")
    )
    return ["/bin/sh", "-c", ssh.sshd_foreground_script(job.spec.ssh.sshd_path, opts)]


def build_worker(job: Job, index: int, mode: PodMode = NORMAL) -> Obj:
    template = job.spec.workers.template
    if mode.command is None:
        mode = replace(mode, command=tuple(worker_command(job)))
    pod = replica_pod(
        job, template, "worker", index, training_names=TRAINING_CONTAINERS, mode=mode, role="worker"
    )
    containers = pod["spec"].get("containers") or []
    if containers:
        c = containers[training_container_index(template, TRAINING_CONTAINERS)]
        ssh.add_ssh_auth(
            pod, c, c, auth_dir(job), needs_bash=False, image_from=worker_template_path(job)
        )
    return pod


def worker_template_path(job: Job) -> str:
    return f"{job.spec.path_of('worker')}.template"


def default_launcher_container(job: Job) -> Obj:
    """The launcher container a 2025-layout launcher template without one gets: the
    image of the workers' training container."""
    worker = training_container(job.spec.workers.template) or {}
    return {"name": LAUNCHER, "image": worker.get("image", "")}


def build_launcher(job: Job, mode: PodMode = NORMAL) -> Obj:
    template = job.spec.launcher_template
    if template is not None:
        return build_launcher_from_template(job, template, mode)
    command, args = mode.command, mode.args
    name = job.name
    spec = job.spec.launcher
    assert spec is not None  # the older layout's launcher (the spec's rules)
    container: Obj = {
        "name": LAUNCHER,
        "image": spec.image,
        "command": list(command)
        if command is not None
        else ["/bin/bash", "-c", launcher_script(job)],
    }
    if args is not None:
        container["args"] = list(args)
    if spec.working_dir:
        container["workingDir"] = spec.working_dir
    if spec.env:
        container["env"] = copy.deepcopy(spec.env)
    if spec.resources:
        container["resources"] = copy.deepcopy(spec.resources)
    container["volumeMounts"] = [ssh.hostfile_mount()]
    # The launcher carries the worker template's labels and annotations, so
    # whatever selects the job's pods (sidecar injection, queues) sees it too.
    template_meta = job.spec.workers.template.get("metadata") or {}
    labels = {
        **(template_meta.get("labels") or {}),
        **replica_labels(job.kind, name, "launcher", 0, "launcher"),
    }
    meta = child_metadata(job, launcher_name(name), labels)
    # Its one container is its default, whatever the worker template names.
    meta["annotations"] = {
        **(template_meta.get("annotations") or {}),
        DEFAULT_CONTAINER: LAUNCHER,
    }
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
    ssh.add_ssh_auth(
        pod, container, container, auth_dir(job), needs_bash=True, image_from="spec.launcher"
    )
    return pod


def build_launcher_from_template(job: Job, template: Obj, mode: PodMode) -> Obj:
    """The 2025 layout's launcher: its template's pod, its ``launcher`` container
    (added when missing) running the launcher script, with the hostfile and key."""
    tpl = copy.deepcopy(template)
    containers = tpl.setdefault("spec", {}).setdefault("containers", [])
    if named_container(tpl, LAUNCHER) is None:
        containers.insert(0, default_launcher_container(job))
    if mode.command is None:
        mode = replace(mode, command=("/bin/bash", "-c", launcher_script(job)))
    pod = replica_pod(job, tpl, "launcher", 0, training_names=(LAUNCHER,), mode=mode, role=LAUNCHER)
    name = launcher_name(job.name)
    pod["metadata"]["name"] = pod["spec"]["hostname"] = name
    container = pod["spec"]["containers"][training_container_index(tpl, (LAUNCHER,))]
    container.setdefault("volumeMounts", []).append(ssh.hostfile_mount())
    pod["spec"].setdefault("volumes", []).append(ssh.hostfile_volume(job.name))
    ssh.add_ssh_auth(
        pod, container, container, auth_dir(job), needs_bash=True, image_from=launcher_path(job)
    )
    return pod


def launcher_path(job: Job) -> str:
    return f"{job.spec.path_of('launcher')}.template"


def build_service(job: Job) -> Obj:
    return headless_service(job, [("ssh", 22), ("master", MASTER_PORT)])
