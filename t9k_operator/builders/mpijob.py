"""MPIJob builders: worker pods running sshd, the launcher pod running mpirun,
the hostfile and the Service.

Everything is built from the job's :class:`~t9k_operator.api.mpijob_replicas.MPIRun`
(``job.spec.run``), whichever layout the spec is written in. The workers are
built from the worker's template, whose container ``mpi-worker`` (older
layout) or ``worker`` (2025 layout), else the first, is the operator's: its
command and args are replaced. The launcher is built from the launcher's own
template when the 2025 layout gives one (its container ``launcher``, else the
first, is the operator's), else from the worker's, as the older layout does.
Workers run only sshd (``spec.ssh.sshdPath``, the job key at
``spec.ssh.sshAuthMountPath``). The launcher ``<job>-launcher`` waits (bounded)
until every worker answers ssh, then ``exec``s ``mpirun``, so mpirun's exit
code is the container's and the job's. mpirun is given the hostfile, ``-x`` for
PATH, LD_LIBRARY_PATH when set, the progress reporter's T9K_PROGRESS_* and
every variable of the launcher container's ``env`` (the ranks, started by
orted through sshd, do not get the pod's environment otherwise), ``--prefix``
(the MPI home), the MCA parameters as ``--mca`` pairs, ``-N`` (processes per
worker) and ``--enable-recovery --max-restarts`` (process recovery) when the
older layout's shorthand asks, mpirun's further arguments as given, and the
program, in that order. As root it runs with Open MPI's
OMPI_ALLOW_RUN_AS_ROOT pair set. Unless the pod's env or
``spec.mca`` say otherwise, host names are kept whole (the Service's
``<pod>.<job>``, which resolve; the bare pod names do not) and mpirun starts
every orted itself (no tree spawn: workers need not reach each other over ssh).

The hostfile holds one ``<job>-worker-<i>.<job>`` line per worker, with
``slots=<n>`` when processes per worker are given, else without: Open MPI
then gives each worker as many slots as it has cores, and mpirun's further
arguments (``-N``, ``-np``) say otherwise. A launcher built from the worker's
template keeps it whole, resources included, as the manual says of every
replica.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from t9k_operator.api.mpijob import LAUNCHER, TRAINING_CONTAINER, WORKER, MPIJobObject
from t9k_operator.api.mpijob_replicas import LAUNCHER_CONTAINER, WORKER_CONTAINER, MPIRun
from t9k_operator.builders import ssh
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    headless_service,
    replica_pod,
)
from t9k_operator.objects import Obj, training_container_index

Job = MPIJobObject

TRAINING_CONTAINERS = (TRAINING_CONTAINER, WORKER_CONTAINER, LAUNCHER_CONTAINER)
"""The operator's container in a built pod: the first of these names found, else the
first (each layout names its own: mpi-worker; worker and launcher)."""
DEBUG_COMMAND = ("/usr/sbin/sshd", "-D")
"""The debug-mode default: workers run sshd (at spec.ssh.sshdPath, made to work on
a stock image); the launcher runs :data:`LAUNCHER_DEBUG_COMMAND` instead."""
LAUNCHER_DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)
HOSTFILE_PATH = ssh.HOSTFILE_PATH
SSH_PORT = 22
MCA_ENV = {"OMPI_MCA_orte_keep_fqdn_hostnames": "1", "OMPI_MCA_plm_rsh_no_tree_spawn": "1"}
"""Open MPI settings the launcher defaults (as environment, which --mca overrides)."""
RUN_AS_ROOT = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def launcher_name(job_name: str) -> str:
    return f"{job_name}-{LAUNCHER}"


def auth_dir(job: Job) -> str:
    return job.spec.ssh.ssh_auth_mount_path


def hostfile(job: Job) -> str:
    run = job.spec.run
    return ssh.workers_hostfile(job.name, run.replicas, run.processes_per_worker)


def hostfile_configmap(job: Job) -> Obj:
    return ssh.hostfile_configmap(job, hostfile(job))


def launcher_template(run: MPIRun) -> Mapping[str, Any]:
    """The template the launcher is built from: its own, else the worker's."""
    return run.launcher_template if run.launcher_template is not None else run.worker_template


def forwarded_env(job: Job) -> list[str]:
    """Names of the launcher container's variables (where mpirun runs), in order, each once."""
    run = job.spec.run
    template = launcher_template(run)
    containers = (template.get("spec") or {}).get("containers") or []
    c = containers[training_container_index(template, (run.launcher_container,))]
    names: list[str] = []
    for var in c.get("env") or []:
        name = var.get("name")
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def exported(job: Job) -> list[str]:
    """What mpirun exports to the ranks (``-x``): PATH, then the container's variables."""
    return ["PATH", *(n for n in forwarded_env(job) if n != "PATH")]


def mpirun_command(job: Job) -> list[str]:
    """``mpirun`` and its arguments, except the shell-computed ``-x`` of
    LD_LIBRARY_PATH (see :func:`launcher_script`)."""
    run = job.spec.run
    cmd = ["mpirun", "--hostfile", HOSTFILE_PATH]
    if run.home:
        cmd += ["--prefix", run.home]
    for key, value in run.mca.items():
        cmd += ["--mca", key, value]
    for name in exported(job):
        cmd += ["-x", name]
    return cmd + shorthand_args(run) + list(run.extra_args) + list(run.program)


def shorthand_args(run: MPIRun) -> list[str]:
    """The older layout's shorthand as mpirun options: ``-N`` and process recovery."""
    out: list[str] = []
    if run.processes_per_worker is not None:
        out += ["-N", str(run.processes_per_worker)]
    if run.max_restarts is not None:
        out += ["--enable-recovery", "--max-restarts", str(run.max_restarts)]
    return out


def launcher_script(job: Job) -> str:
    """The launcher's script (bash): check the image, wait until every worker
    answers ssh, then ``exec`` mpirun. The wait's settings can be changed by
    T9K_* variables in the pod's env."""
    auth = auth_dir(job)
    mpirun = mpirun_command(job)
    quoted = " ".join(shlex.quote(a) for a in mpirun[1:])
    lines = [
        "set -eu",
        *ssh.wait_settings_lines(),
        *ssh.require_command_lines("mpirun", "the launcher runs the MPI program with it"),
        *ssh.require_command_lines("ssh", "mpirun reaches the workers with the OpenSSH client"),
        "# ssh (and so mpirun) reads ~/.ssh: point it at the job key.",
        f'if [ "{auth}" != "$HOME/.ssh" ] && [ ! -e "$HOME/.ssh" ]; then'
        f' ln -s {shlex.quote(auth)} "$HOME/.ssh"; fi',
        "# Open MPI refuses to run as root unless told it may.",
        'if [ "$(id -u)" -eq 0 ]; then export '
        + " ".join(f"{name}=1" for name in RUN_AS_ROOT)
        + "; fi",
        "# The hostfile's names resolve as written (<pod>.<job>), not cut to the pod's",
        "# name; mpirun starts every worker's orted itself, so workers need not ssh to",
        "# each other. spec.mca (--mca) and the pod's env may say otherwise.",
        *(f': "${{{name}:={value}}}"; export {name}' for name, value in MCA_ENV.items()),
        "# What only the running pod knows is exported too: LD_LIBRARY_PATH when set, and",
        "# the progress reporter's settings (docs/progress.md), which every pod has alike.",
        "forward=()",
        'if [ -n "${LD_LIBRARY_PATH:-}" ]; then forward=(-x LD_LIBRARY_PATH); fi',
        'for name in $(compgen -e); do case "$name" in T9K_PROGRESS_*) forward+=(-x "$name");;'
        " esac; done",
        *ssh.wait_for_hosts_lines(),
        f'exec mpirun "${{forward[@]}}" {quoted}',
    ]
    return "\n".join(lines) + "\n"


def worker_command(job: Job) -> tuple[str, ...]:
    auth = auth_dir(job)
    opts = (
        ""
        if auth == ssh.DEFAULT_AUTH_DIR
        else f" -o AuthorizedKeysFile={shlex.quote(auth)}/authorized_keys"
    )
    return ("/bin/sh", "-c", ssh.sshd_foreground_script(job.spec.ssh.sshd_path, opts))


def _named(pod: Obj, template: Mapping[str, Any], name: str) -> Obj:
    """The pod's operator container (``pod`` changed): named ``name`` when nameless."""
    c: Obj = pod["spec"]["containers"][training_container_index(template, (name,))]
    if not c.get("name"):
        c["name"] = name
    return c


def build_worker(job: Job, index: int, mode: PodMode = NORMAL) -> Obj:
    run = job.spec.run
    template, names = dict(run.worker_template), (run.worker_container,)
    if mode.command is None or (mode.debug and mode.command == DEBUG_COMMAND):
        mode = replace(mode, command=worker_command(job), args=None)
    pod = replica_pod(job, template, WORKER, index, training_names=names, mode=mode, role=WORKER)
    if pod["spec"].get("containers"):
        c = _named(pod, template, run.worker_container)
        ssh.add_ssh_auth(pod, c, c, auth_dir(job), needs_bash=False, image_from=run.worker_field)
    return pod


def build_launcher(job: Job, mode: PodMode = NORMAL) -> Obj:
    name = job.name
    run = job.spec.run
    template, names = dict(launcher_template(run)), (run.launcher_container,)
    if mode.debug and mode.command == DEBUG_COMMAND:
        mode = replace(mode, command=LAUNCHER_DEBUG_COMMAND, args=None)
    elif mode.command is None:
        mode = replace(mode, command=("/bin/bash", "-c", launcher_script(job)), args=None)
    pod = replica_pod(job, template, LAUNCHER, 0, training_names=names, mode=mode, role=LAUNCHER)
    pod["metadata"]["name"] = pod["spec"]["hostname"] = launcher_name(name)
    spec = pod["spec"]
    spec.setdefault("volumes", []).append(ssh.hostfile_volume(name))
    if spec.get("containers"):
        c = _named(pod, template, run.launcher_container)
        c.setdefault("volumeMounts", []).append(ssh.hostfile_mount())
        ssh.add_ssh_auth(pod, c, c, auth_dir(job), needs_bash=True, image_from=run.launcher_field)
    return pod


def build_service(job: Job) -> Obj:
    return headless_service(job, [("ssh", SSH_PORT)])
