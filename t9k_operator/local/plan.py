"""From a job manifest to the local processes that stand for its replicas (pure
but for the free ports it is handed).

The job is parsed by its kind's API model and its pods are built by the kind's
own ``build_pod`` and ``extras`` (the builders the operator runs), with
``NORMAL`` pod mode. Each pod's training container is resolved as kubelet
would resolve it on one machine (:mod:`.kubelet`), and the cluster's names,
ports and mount paths become this machine's (:mod:`.rewrite`): every port the
job's Services publish for training (the master, rendezvous and scheduler
ports; not ssh) becomes one free port of this machine, the same for every
replica.

What stands for the replicas is the kind's to say, through its ``local`` hook
(:mod:`t9k_operator.kinds.local`): where a program given after ``--`` goes,
and either each replica's training container running its command and
arguments, or, for a kind whose launcher starts every rank over ssh (there is
no sshd here), those ranks started directly as the launcher's per-node step
would start them, all standing for the launcher's replica.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from t9k_operator import client_parts
from t9k_operator.builders.common import (
    NORMAL,
    REPLICA_INDEX,
    REPLICA_TYPE,
)
from t9k_operator.kinds import registry
from t9k_operator.kinds.contract import JobKind, parse
from t9k_operator.kinds.local import LOOPBACK, Launch, Process, Program, Replica
from t9k_operator.kinds.view import JobView
from t9k_operator.local.kubelet import DEFAULT_NAMESPACE, config_maps, expand, mounts, resolve_env
from t9k_operator.local.rewrite import Rewriter
from t9k_operator.objects import Obj, training_container_index

__all__ = ["LocalJob", "LocalRunError", "Process", "plan"]

SSH_PORT_NAMES = frozenset({"ssh", "placeholder"})
"""Service ports that carry nothing a local replica listens on."""


class LocalRunError(Exception):
    """The manifest cannot be run locally; the message says why."""


@dataclass(frozen=True)
class LocalJob:
    kind: JobKind[Any]
    view: JobView
    """The job in the engine's terms, for the kind's own ``outcome`` rule."""
    processes: tuple[Process, ...]
    files: Mapping[str, str]
    """Files to write before starting, by path relative to the run's directory."""
    notes: tuple[str, ...]
    """What differs from the cluster, or could not be resolved, in words."""
    failed_exit_code: int | None = None
    """The exit code a failed job reports when its launcher's code is fixed
    (ColossalAI's launcher exits 1 whichever host failed); None: the failed
    replica's own code."""
    cluster_commands: Mapping[str, str] = field(default_factory=dict)
    """For the launcher kinds: what the launcher pod runs on the cluster."""


@dataclass
class _Here:
    """This machine as a kind's launch sees it (:class:`t9k_operator.kinds.local.Here`)."""

    rewriter: Rewriter
    free_port: Callable[[], int]
    run_dir: str
    files: dict[str, str]
    python: str
    as_is: bool
    notes: list[str] = field(default_factory=list)

    def text(self, value: str) -> str:
        return self.rewriter.text(value)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        return self.rewriter.env(env)

    def argv(self, label: str, replica: Replica) -> list[str]:
        return _argv(label, replica, self.rewriter)

    def port(self, port: int) -> int:
        if port not in self.rewriter.ports:
            self.rewriter.ports[port] = self.free_port()
        return self.rewriter.port(port)

    def file(self, name: str, content: str, *, mounted_at: str) -> str:
        self.files[name] = content
        self.rewriter.paths[mounted_at] = path = f"{self.run_dir}/{name}"
        return path

    def note(self, text: str) -> None:
        self.notes.append(text)


@dataclass(frozen=True)
class _Pod:
    pod: Obj
    replica: Replica
    notes: tuple[str, ...]


def _kind(raw: Obj) -> JobKind[Any]:
    name = str(raw.get("kind", ""))
    try:
        kind = registry.by_kind(name)
    except KeyError:
        known = ", ".join(k.crd.kind for k in registry.KINDS)
        raise LocalRunError(f"kind {name!r} is not a job kind of t9k ({known})") from None
    want = f"{kind.crd.group}/{kind.crd.version}"
    if raw.get("apiVersion") != want:
        raise LocalRunError(f"a {name} is apiVersion {want}, not {raw.get('apiVersion')!r}")
    return kind


def _services(
    extras: Sequence[Obj], free_port: Callable[[], int]
) -> tuple[dict[str, Obj], dict[int, int]]:
    """The job's Services as the builders want them (a ClusterIP is 127.0.0.1)
    and a free port of this machine for each port they publish for training."""
    services: dict[str, Obj] = {}
    ports: dict[int, int] = {}
    for svc in extras:
        if svc.get("kind") != "Service":
            continue
        spec = dict(svc.get("spec") or {})
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = LOOPBACK
        services[svc["metadata"]["name"]] = {**svc, "spec": spec}
        for p in spec.get("ports") or []:
            if p.get("name") not in SSH_PORT_NAMES and int(p["port"]) not in ports:
                ports[int(p["port"])] = free_port()
    return services, ports


def plan(
    manifest: Mapping[str, Any],
    run_dir: str,
    free_port: Callable[[], int],
    *,
    program: Sequence[str] = (),
    python: str = "python",
    workdir: str | None = None,
) -> LocalJob:
    """The local processes of ``manifest``'s job. ``run_dir`` is where its files
    will be (the paths in env and arguments point there); ``free_port`` gives a
    free port of this machine; ``program`` replaces the job's training program;
    ``python`` runs what a launcher would run with Python (DeepSpeed's
    ``run.python``, ColossalAI's ``worker.command``); ``workdir``: the directory
    the replicas run in, which stands for the cluster's workdir path (the
    workdir integration's ``mount_path``, :mod:`t9k_operator.client_parts`)
    wherever the job names it."""
    raw: Obj = copy.deepcopy(dict(manifest))
    kind = _kind(raw)
    placed = Program(raw)
    if program:
        placed = kind.local.program(raw, [str(a) for a in program])
        raw = placed.manifest
    job, view = _parsed(kind, raw)
    extras = kind.extras(job)
    maps = config_maps(extras)
    services, ports = _services(extras, free_port)
    built = [
        kind.build_pod(job, role.type, index, NORMAL, services)
        for role in view.roles
        for index in range(role.replicas)
    ]
    rewriter = Rewriter(_hosts(built, services, job.name), job.namespace, ports, list(services))
    mount_path = getattr(client_parts.part("workdir"), "mount_path", None)
    if workdir is not None and mount_path:
        rewriter.paths[mount_path] = workdir
    files: dict[str, str] = {}
    pods = _replica_pods(kind, job.name, built, maps, run_dir, files, rewriter)
    here = _Here(rewriter, free_port, run_dir, files, placed.python or python, placed.as_is)
    replicas = {label: p.replica for label, p in pods.items()}
    launch = kind.local.launch(job, replicas, here)
    if launch is not None:
        return _launched(kind, view, launch, pods, here)
    return _each_replica(kind, view, pods, rewriter, files)


def _parsed(kind: JobKind[Any], raw: Obj) -> tuple[Any, JobView]:
    """The job parsed by its kind's model (named in a namespace, with a uid, as
    the API server would store it) and its view, if it trains as it is."""
    meta = raw.setdefault("metadata", {})
    meta.setdefault("namespace", DEFAULT_NAMESPACE)
    meta.setdefault("uid", f"local-{meta.get('name', 'job')}")
    job, error = parse(kind.model, raw)
    if job is None:
        raise LocalRunError(error or "the manifest does not parse")
    view = kind.view(job)
    if view.spec_error:
        raise LocalRunError(view.spec_error)
    if view.debug or view.paused:
        raise LocalRunError(
            "spec.runMode enables debug or pause mode, in which the replicas do not train: "
            "remove runMode to run the training locally"
        )
    return job, view


def _hosts(built: Sequence[Obj], services: Mapping[str, Obj], job_name: str) -> list[str]:
    """The host names of the job's pods: each pod's in its subdomain, and a pod's
    bare name when a Service is named as it (that replica's own)."""
    hosts = [f"{p['metadata']['name']}.{p['spec'].get('subdomain', job_name)}" for p in built]
    hosts += [str(p["metadata"]["name"]) for p in built if p["metadata"]["name"] in services]
    return hosts


def _replica_pods(
    kind: JobKind[Any],
    job_name: str,
    built: Sequence[Obj],
    maps: Mapping[str, Mapping[str, str]],
    run_dir: str,
    files: dict[str, str],
    rewriter: Rewriter,
) -> dict[str, _Pod]:
    """Each pod by its replica's label (``worker-0``), with its training container
    and env as kubelet would resolve them here; its mounts' files go in ``files``."""
    pods: dict[str, _Pod] = {}
    for pod in built:
        label = str(pod["metadata"]["name"]).removeprefix(f"{job_name}-")
        containers = pod["spec"].get("containers") or []
        c = containers[training_container_index(pod, kind.training_containers)]
        notes: list[str] = []
        env = resolve_env(c, pod, maps, label, notes)
        env["HOSTNAME"] = str(pod["spec"].get("hostname") or pod["metadata"]["name"])
        mounts(pod, c, maps, run_dir, files, rewriter.paths, label, notes)
        pods[label] = _Pod(pod, Replica(c, env), tuple(notes))
    return pods


def _launched(
    kind: JobKind[Any], view: JobView, launch: Launch, pods: Mapping[str, _Pod], here: _Here
) -> LocalJob:
    """The ranks of a launcher: they get the launcher's env only (an ssh session
    does not see its pod's env), so only the launcher's notes are worth saying."""
    return LocalJob(
        kind,
        view,
        launch.processes,
        here.files,
        (*pods[launch.launcher].notes, *here.notes),
        failed_exit_code=launch.failed_exit_code,
        cluster_commands={launch.launcher: launch.cluster_command},
    )


def _argv(label: str, replica: Replica, rewriter: Rewriter) -> list[str]:
    """A replica's command and args as kubelet expands them, made this machine's."""
    c, env = replica.container, replica.env
    if not c.get("command"):
        raise LocalRunError(
            f"{label}: the container gives no command (its image's entrypoint runs on the "
            "cluster), so there is nothing to run locally: give one after `--`"
        )
    argv = [*(c.get("command") or []), *(c.get("args") or [])]
    return [rewriter.text(expand(str(a), env)) for a in argv]


def _each_replica(
    kind: JobKind[Any],
    view: JobView,
    pods: Mapping[str, _Pod],
    rewriter: Rewriter,
    files: Mapping[str, str],
) -> LocalJob:
    """Each replica's training container, running its command and arguments."""
    notes = [note for p in pods.values() for note in p.notes]
    processes = []
    working_dirs = set()
    for label, p in pods.items():
        c, env = p.replica.container, p.replica.env
        argv = _argv(label, p.replica, rewriter)
        labels = p.pod["metadata"]["labels"]
        replica = (labels[REPLICA_TYPE], int(labels[REPLICA_INDEX]))
        processes.append(Process(label, replica, tuple(argv), rewriter.env(env)))
        if c.get("workingDir"):
            working_dirs.add(str(c["workingDir"]))
    for wd in sorted(working_dirs):
        notes.append(f"workingDir {wd} is the image's: the replicas run in this directory")
    return LocalJob(kind, view, tuple(processes), files, tuple(notes))
