"""From a job manifest to the local processes that stand for its replicas (pure
but for the free ports it is handed).

The job is parsed by its kind's API model and its pods are built by the kind's
own ``build_pod`` and ``extras`` (the builders the operator runs), with
``NORMAL`` pod mode. From each pod's training container come the command,
arguments and environment, resolved as kubelet would resolve them on one
machine:

* ``value`` as written, with kubelet's ``$(NAME)`` expansion (``$$`` is a
  literal ``$``; an unknown name stays as written), in env values and then in
  the command and arguments;
* ``valueFrom.fieldRef``: ``metadata.name``/``namespace``/``uid``/``labels``/
  ``annotations``, ``spec.nodeName``/``serviceAccountName``, and every IP field
  (``status.podIP``, ``status.hostIP``...) as 127.0.0.1;
* ``valueFrom.configMapKeyRef`` of a ConfigMap the operator builds (the
  hostfile); any other ConfigMap, every ``secretKeyRef``, ``resourceFieldRef``
  and ``envFrom`` cannot be read without a cluster: the variable is left out
  (so a value exported in the caller's shell, which every process inherits,
  is what the program sees) and a note says so.

Addresses: every replica's DNS name (``<job>-<type>-<i>.<job>``, with or
without ``.<namespace>[.svc[.cluster.local]]``) and the MSJob scheduler
Service's name become 127.0.0.1, and every port the job's Services publish for
training (the master, rendezvous and scheduler ports; not ssh) becomes one
free port of this machine, the same for every replica. Files the operator
mounts from its own ConfigMaps (the hostfile) are written under the run's
directory and their mount paths in arguments and env values point there.

DeepSpeedJob and ColossalAIJob launch over ssh: worker-0 (DeepSpeed) or the
launcher pod (ColossalAI) runs a launcher that logs into every worker, whose
pods run nothing but sshd. Without sshd the launcher cannot run here, so each
rank is started directly with the command and environment the launcher's
per-node step would give it (DeepSpeed's ``deepspeed.launcher.launch``,
ColossalAI's ``torchrun`` line): a single-node launch's view of each rank,
with each worker's ranks numbered as on the cluster. All of those ranks stand
for the launcher, whose exit decides those kinds' jobs.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from t9k_operator.api.deepspeed import effective_slots, effective_worker_count
from t9k_operator.api.deepspeed_config import command_argv
from t9k_operator.builders import colossalai as colossalai_build
from t9k_operator.builders import deepspeed as deepspeed_build
from t9k_operator.builders import pytorch as pytorch_build
from t9k_operator.builders import ssh
from t9k_operator.builders.common import (
    NORMAL,
    REPLICA_INDEX,
    REPLICA_TYPE,
    training_container_index,
)
from t9k_operator.kinds import registry
from t9k_operator.kinds.contract import JobKind, parse
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj

LOOPBACK = "127.0.0.1"
LOCAL_NODE = "localhost"
DEFAULT_NAMESPACE = "default"
SSH_PORT_NAMES = frozenset({"ssh", "placeholder"})
"""Service ports that carry nothing a local replica listens on."""
OPERATOR_VOLUMES = frozenset({ssh.KEY_VOLUME, ssh.AUTH_VOLUME})
"""The operator's ssh volumes: the key is not used locally, so not worth a note."""
DEEPSPEED_MASTER_PORT = 29500
"""deepspeed's ``--master_port`` default (the first host's TCPStore port)."""
DEEPSPEED_ENV_SKIPPED = frozenset({"HOSTNAME", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "TERM"})
"""What worker-0's launch script leaves out of ``.deepspeed_env`` (with T9K_*)."""
PYTHON_NAME = re.compile(r"python[0-9.]*$")


class LocalRunError(Exception):
    """The manifest cannot be run locally; the message says why."""


@dataclass(frozen=True)
class Process:
    """One local process: a replica's container, or one rank a launcher would start."""

    label: str
    """What prefixes its log lines: ``worker-0``, ``scheduler-0``, ``worker-1:0``."""
    replica: tuple[str, int]
    """The replica (pod) whose exit it stands for, as the kind's rules name it."""
    argv: tuple[str, ...]
    env: Mapping[str, str]
    """The environment the pod gives it; the caller's environment goes under it."""


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


# -- kubelet's resolution of a container, on one machine ----------------------------------

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubelet's ``$(NAME)`` expansion: a known name is replaced, an unknown one kept
    as written, ``$$`` becomes ``$``."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def _field_ref(path: str, pod: Obj) -> str | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace") or DEFAULT_NAMESPACE,
        "metadata.uid": f"local-{meta.get('name')}",
        "spec.nodeName": LOCAL_NODE,
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": LOOPBACK,
        "status.podIPs": LOOPBACK,
        "status.hostIP": LOOPBACK,
        "status.hostIPs": LOOPBACK,
    }
    if path in simple:
        value = simple[path]
        return None if value is None else str(value)
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']*)'\]", path)
    if m:
        value = (meta.get(m.group(1)) or {}).get(m.group(2))
        return None if value is None else str(value)
    return None


def resolve_env(
    container: Mapping[str, Any],
    pod: Obj,
    config_maps: Mapping[str, Mapping[str, str]],
    label: str,
    notes: list[str],
) -> dict[str, str]:
    """The container's environment as kubelet would give it here (module docstring)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        what = "configMapRef" if "configMapRef" in source else "secretRef"
        ref = (source.get(what) or {}).get("name", "?")
        if what == "configMapRef" and ref in config_maps:
            prefix = source.get("prefix") or ""
            env.update({prefix + k: v for k, v in config_maps[ref].items()})
            continue
        notes.append(
            f"{label}: envFrom {what} {ref!r} cannot be read without a cluster; "
            "export what the program needs in this shell (every replica inherits it)"
        )
    for item in container.get("env") or []:
        name = str(item.get("name"))
        source = item.get("valueFrom")
        if source is None:
            env[name] = expand(str(item.get("value", "")), env)
            continue
        value: str | None = None
        why = ""
        if "fieldRef" in source:
            path = str((source["fieldRef"] or {}).get("fieldPath"))
            value = _field_ref(path, pod)
            why = f"fieldRef {path} has no local value"
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"] or {}
            value = config_maps.get(ref.get("name", ""), {}).get(ref.get("key", ""))
            why = f"configMapKeyRef {ref.get('name')}/{ref.get('key')} needs the cluster"
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"] or {}
            why = f"secretKeyRef {ref.get('name')}/{ref.get('key')} needs the cluster"
        elif "resourceFieldRef" in source:
            ref = source["resourceFieldRef"] or {}
            why = f"resourceFieldRef {ref.get('resource')} is the node's to say"
        else:
            why = "its valueFrom is of a kind unknown here"
        if value is None:
            notes.append(
                f"{label}: {name} is left unset ({why}); export it in this shell to give it a value"
            )
            continue
        env[name] = value
    return env


# -- addresses, ports and files -----------------------------------------------------------


@dataclass
class Rewriter:
    """Turns the cluster's names, ports and mount paths into this machine's.

    ``hosts`` (the pods' ``<pod>.<job>``) are replaced wherever they stand as a
    host name; ``services`` (the Services' bare names, which could also be a
    word of a path) only when a namespace suffix or a ``:port`` follows."""

    hosts: list[str]
    namespace: str
    ports: dict[int, int]
    services: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    _host_re: re.Pattern[str] | None = None

    def _hosts(self) -> re.Pattern[str]:
        if self._host_re is None:
            ns = re.escape(self.namespace)
            suffix = rf"\.{ns}(?:\.svc(?:\.cluster\.local)?)?"
            end = r"(?![\w-]|\.[\w-])"  # the name ends here: no other domain follows

            def names(items: list[str]) -> str:
                return "|".join(re.escape(h) for h in sorted(items, key=len, reverse=True))

            alternatives = []
            if self.hosts:
                alternatives.append(rf"(?:{names(self.hosts)})(?:{suffix})?{end}")
            if self.services:
                alternatives.append(rf"(?:{names(self.services)})(?:{suffix}{end}|(?=:\d))")
            pattern = "|".join(alternatives) or r"(?!x)x"
            self._host_re = re.compile(rf"(?<![\w.-])(?:{pattern})")
        return self._host_re

    def port(self, port: int) -> int:
        return self.ports.get(port, port)

    def text(self, value: str) -> str:
        out = self._hosts().sub(LOOPBACK, value)
        if self.ports:
            out = re.sub(
                rf"(?<=\b{re.escape(LOOPBACK)}:)(\d+)\b",
                lambda m: str(self.port(int(m.group(1)))),
                out,
            )
            out = re.sub(
                r"^(--?master[_-]port=)(\d+)$",
                lambda m: m.group(1) + str(self.port(int(m.group(2)))),
                out,
            )
        for mount, local in sorted(self.paths.items(), key=lambda kv: -len(kv[0])):
            out = re.sub(rf"(?<![\w.-]){re.escape(mount)}(?=$|[/\s:;,'\"])", local, out)
        return out

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for name, value in env.items():
            if name.endswith("PORT") and value.isdigit():
                out[name] = str(self.port(int(value)))
            else:
                out[name] = self.text(value)
        return out


def _config_maps(extras: Iterable[Obj]) -> dict[str, dict[str, str]]:
    return {
        o["metadata"]["name"]: {str(k): str(v) for k, v in (o.get("data") or {}).items()}
        for o in extras
        if o.get("kind") == "ConfigMap"
    }


def _mounts(
    pod: Obj,
    container: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, str]],
    run_dir: str,
    files: dict[str, str],
    paths: dict[str, str],
    label: str,
    notes: list[str],
) -> None:
    """Materialize the container's mounts of the operator's ConfigMaps under the
    run's directory (``files``, ``paths``); note the mounts that stay behind."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        path = str(mount.get("mountPath"))
        cm = str((volume.get("configMap") or {}).get("name"))
        if cm in config_maps:
            data = config_maps[cm]
            items = (volume.get("configMap") or {}).get("items")
            layout = {i["path"]: data.get(i["key"], "") for i in items} if items else dict(data)
            base = f"configmaps/{cm}"
            for rel, content in layout.items():
                files[f"{base}/{rel}"] = content
            sub = mount.get("subPath")
            paths[path] = f"{run_dir}/{base}/{sub}" if sub else f"{run_dir}/{base}"
            continue
        if mount.get("name") in OPERATOR_VOLUMES:
            continue
        what = next((k for k in volume if k != "name"), "volume")
        notes.append(f"{label}: {what} volume {mount.get('name')!r} at {path} is not mounted here")


# -- the kinds -----------------------------------------------------------------------------


def _is_python(program: str) -> bool:
    return bool(PYTHON_NAME.fullmatch(PurePosixPath(program).name))


def _replace_program(manifest: Obj, program: Sequence[str]) -> tuple[Obj, str | None, bool]:
    """The manifest with its training program replaced by ``program`` (a whole
    command line), in the field the kind runs it from; the interpreter it
    names when that field holds a script rather than a command; and whether
    a launcher must run it without Python (ColossalAI's command is a script)."""
    out = copy.deepcopy(manifest)
    spec = out.setdefault("spec", {})
    kind = out.get("kind")
    argv = [str(a) for a in program]
    python = argv[0] if len(argv) > 1 and _is_python(argv[0]) else None
    script = argv[1:] if python else None

    def training(template: Obj, names: Sequence[str]) -> Obj | None:
        containers = (template.get("spec") or {}).get("containers") or []
        return containers[training_container_index(template, names)] if containers else None

    if kind == "PyTorchTrainingJob":
        torchrun = (spec.get("torchrunConfig") or {}).get("enabled")
        for rs in spec.get("replicaSpecs") or []:
            c = training(rs.get("template") or {}, pytorch_build.TRAINING_CONTAINERS)
            if c is None:
                continue
            if torchrun:  # torchrun runs the container's args: a script, else --no-python
                c["args"] = script if script is not None and script[0] != "-m" else argv
            else:
                c["command"], _ = argv, c.pop("args", None)
        if torchrun and (script is None or script[0] == "-m"):
            extra = spec["torchrunConfig"].setdefault("extraOptions", [])
            extra.append("--no-python")
        return out, python, False
    if kind == "MSJob":
        for rs in (spec.get("msReplicaSpecs") or {}).values():
            c = training(rs.get("template") or {}, ("mindspore",))
            if c is not None:
                c["command"], _ = argv, c.pop("args", None)
        return out, None, False
    if kind == "DeepSpeedJob":
        config = spec.setdefault("config", {})
        if script and script[0] == "-m" and len(script) > 1:
            config["run"] = {"module": script[1:]}
        elif script and not script[0].startswith("-"):
            config["run"] = {"python": script}
        else:
            python, config["run"] = None, {"exec": argv}
        return out, python, False
    if kind == "ColossalAIJob":
        worker = spec.setdefault("worker", {})
        if script and not script[0].startswith("-"):
            worker["command"] = script
            return out, python, False
        worker["command"] = argv
        return out, None, True
    return out, None, False


def _label(job_name: str, pod: Obj) -> str:
    return str(pod["metadata"]["name"]).removeprefix(f"{job_name}-")


def _flag_value(args: Sequence[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(args):
                return args[i + 1]
    return None


def plan(
    manifest: Mapping[str, Any],
    run_dir: str,
    free_port: Callable[[], int],
    *,
    program: Sequence[str] = (),
    python: str = "python",
) -> LocalJob:
    """The local processes of ``manifest``'s job. ``run_dir`` is where its files
    will be (the paths in env and arguments point there); ``free_port`` gives a
    free port of this machine; ``program`` replaces the job's training program;
    ``python`` runs what a launcher would run with Python (DeepSpeed's
    ``run.python``, ColossalAI's ``worker.command``)."""
    raw: Obj = copy.deepcopy(dict(manifest))
    kind_name = str(raw.get("kind", ""))
    try:
        kind = registry.by_kind(kind_name)
    except KeyError:
        known = ", ".join(k.crd.kind for k in registry.KINDS)
        raise LocalRunError(f"kind {kind_name!r} is not a job kind of t9k ({known})") from None
    want = f"{kind.crd.group}/{kind.crd.version}"
    if raw.get("apiVersion") != want:
        raise LocalRunError(f"a {kind_name} is apiVersion {want}, not {raw.get('apiVersion')!r}")
    no_python = False
    if program:
        raw, interpreter, no_python = _replace_program(raw, program)
        python = interpreter or python
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
    notes: list[str] = []
    extras = kind.extras(job)
    config_maps = _config_maps(extras)
    services: dict[str, Obj] = {}
    ports: dict[int, int] = {}
    service_names: list[str] = []
    for svc in extras:
        if svc.get("kind") != "Service":
            continue
        spec = dict(svc.get("spec") or {})
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = LOOPBACK
        service_names.append(svc["metadata"]["name"])
        services[svc["metadata"]["name"]] = {**svc, "spec": spec}
        for p in spec.get("ports") or []:
            if p.get("name") not in SSH_PORT_NAMES and int(p["port"]) not in ports:
                ports[int(p["port"])] = free_port()
    pods = [
        kind.build_pod(job, role.type, index, NORMAL, services)
        for role in view.roles
        for index in range(role.replicas)
    ]
    hosts = [f"{p['metadata']['name']}.{p['spec'].get('subdomain', job.name)}" for p in pods]
    rewriter = Rewriter(hosts, job.namespace, ports, service_names)
    files: dict[str, str] = {}
    containers: dict[str, tuple[Obj, Obj, dict[str, str]]] = {}
    # The launcher kinds' ranks get the launcher's env only (an ssh session
    # does not see its pod's env), so only the launcher's notes are worth saying.
    said = {"DeepSpeedJob": "worker-0", "ColossalAIJob": "launcher"}.get(kind_name)
    for pod in pods:
        label = _label(job.name, pod)
        cs = pod["spec"].get("containers") or []
        c = cs[training_container_index(pod, kind.training_containers)]
        pod_notes: list[str] = []
        env = resolve_env(c, pod, config_maps, label, pod_notes)
        env["HOSTNAME"] = str(pod["spec"].get("hostname") or pod["metadata"]["name"])
        _mounts(pod, c, config_maps, run_dir, files, rewriter.paths, label, pod_notes)
        containers[label] = (pod, c, env)
        if said in (None, label):
            notes.extend(pod_notes)
    if kind_name == "DeepSpeedJob":
        return _deepspeed(
            kind, view, job, containers, rewriter, files, notes, free_port, python, run_dir
        )
    if kind_name == "ColossalAIJob":
        return _colossalai(
            kind, view, job, containers, rewriter, files, notes, free_port, python, no_python
        )
    processes = []
    working_dirs = set()
    for label, (pod, c, env) in containers.items():
        argv = [*(c.get("command") or []), *(c.get("args") or [])]
        if not c.get("command"):
            raise LocalRunError(
                f"{label}: the container gives no command (its image's entrypoint runs on the "
                "cluster), so there is nothing to run locally: give one after `--`"
            )
        argv = [rewriter.text(expand(str(a), env)) for a in argv]
        labels = pod["metadata"]["labels"]
        replica = (labels[REPLICA_TYPE], int(labels[REPLICA_INDEX]))
        processes.append(Process(label, replica, tuple(argv), rewriter.env(env)))
        if c.get("workingDir"):
            working_dirs.add(str(c["workingDir"]))
    for wd in sorted(working_dirs):
        notes.append(f"workingDir {wd} is the image's: the replicas run in this directory")
    return LocalJob(kind, view, tuple(processes), files, tuple(notes))


def _ranks_env(base: Mapping[str, str], extra: Mapping[str, object]) -> dict[str, str]:
    return {**base, **{k: str(v) for k, v in extra.items()}}


def _deepspeed(
    kind: JobKind[Any],
    view: JobView,
    job: Any,
    containers: Mapping[str, tuple[Obj, Obj, dict[str, str]]],
    rewriter: Rewriter,
    files: dict[str, str],
    notes: list[str],
    free_port: Callable[[], int],
    python: str,
    run_dir: str,
) -> LocalJob:
    """Every rank as ``deepspeed.launcher.launch`` starts it on its node, with
    the environment ``.deepspeed_env`` carries from worker-0 (module docstring)."""
    cfg = deepspeed_build.config(job)
    workers, slots = effective_worker_count(job.spec), effective_slots(job.spec)
    other = list(cfg.other_args)
    port = int(_flag_value(other, "--master_port") or DEEPSPEED_MASTER_PORT)
    rewriter.ports.setdefault(port, free_port())
    cluster = " ".join(shlex.quote(a) for a in deepspeed_build.deepspeed_command(job))
    ignored = [a for a in other if not a.startswith(("--master_port", "--master_addr"))]
    if ignored:
        notes.append(f"deepspeed arguments not applied locally: {' '.join(ignored)}")
    if cfg.autotune != "none":
        notes.append("autotuning is not run locally: the ranks train as configured")
    # worker-0's launch script writes .deepspeed_env from its environment; pdsh
    # gives the remote ranks that, not their own pods' environment.
    _, _, launcher_env = containers["worker-0"]
    ds_env = {
        k: v
        for k, v in rewriter.env(launcher_env).items()
        if not k.startswith("T9K_") and k not in DEEPSPEED_ENV_SKIPPED and "\n" not in v
    }
    files[".deepspeed_env"] = "".join(f"{k}={v}\n" for k, v in ds_env.items())
    rewriter.paths[deepspeed_build.ENV_FILE] = f"{run_dir}/.deepspeed_env"
    run = cfg.run
    assert run is not None  # spec_error refuses a job without one
    run_argv = [rewriter.text(a) for a in run.argv]
    flag: list[str] | None = [] if not cfg.local_rank else None
    processes = []
    for node in range(workers):
        for local in range(slots):
            rank = node * slots + local
            local_flag = flag if flag is not None else [f"--local_rank={local}"]
            if run.kind == "exec":
                argv = [run_argv[0], *local_flag, *run_argv[1:]]
            elif run.kind == "module":
                argv = [python, "-u", "-m", run_argv[0], *local_flag, *run_argv[1:]]
            else:
                argv = [python, "-u", run_argv[0], *local_flag, *run_argv[1:]]
            env = _ranks_env(
                ds_env,
                {
                    "RANK": rank,
                    "LOCAL_RANK": local,
                    "WORLD_SIZE": workers * slots,
                    "LOCAL_SIZE": slots,
                    "CROSS_RANK": node,
                    "CROSS_SIZE": workers,
                    "MASTER_ADDR": LOOPBACK,
                    "MASTER_PORT": rewriter.port(port),
                },
            )
            label = f"worker-{node}" if slots == 1 else f"worker-{node}:{local}"
            processes.append(Process(label, ("worker", 0), tuple(argv), env))
    notes.append(
        "DeepSpeedJob: on the cluster worker-0 runs `"
        + cluster
        + "`, which reaches every worker over ssh (pdsh) and needs sshd on each: here there "
        "is no sshd, so each rank is started directly as deepspeed.launcher.launch would "
        "start it on its worker, with worker-0's environment (.deepspeed_env); "
        "the ranks together stand for worker-0, whose exit decides the job"
    )
    return LocalJob(
        kind,
        view,
        tuple(processes),
        files,
        tuple(notes),
        cluster_commands={"worker-0": cluster},
    )


def _colossalai(
    kind: JobKind[Any],
    view: JobView,
    job: Any,
    containers: Mapping[str, tuple[Obj, Obj, dict[str, str]]],
    rewriter: Rewriter,
    files: dict[str, str],
    notes: list[str],
    free_port: Callable[[], int],
    python: str,
    no_python: bool,
) -> LocalJob:
    """Every rank as the ``torchrun`` line ``colossalai run`` starts on each
    worker would start it, with the launcher's environment (module docstring)."""
    w = job.spec.worker
    workers, per_worker = w.replicas, int(w.proc_per_worker)
    extra = colossalai_build.extra_launch_args(w.torch_args)
    overrides = dict(kv.split("=", 1) for kv in extra.split(",") if "=" in kv) if extra else {}
    port = int(overrides.get("master_port", colossalai_build.MASTER_PORT))
    rewriter.ports.setdefault(port, free_port())
    ignored = [kv for kv in extra.split(",") if kv and kv.split("=")[0] not in ("master_port",)]
    if ignored:
        notes.append(f"torchrun arguments not applied locally: {','.join(ignored)}")
    cluster = " ".join(shlex.quote(a) for a in colossalai_build.colossalai_command(job))
    _, launcher, launcher_env = containers["launcher"]
    env_base = rewriter.env(launcher_env)
    env_base.pop("HOSTNAME", None)
    command = [rewriter.text(str(a)) for a in command_argv(list(w.command or []))]
    if launcher.get("workingDir"):
        notes.append(
            f"the launcher's workingDir {launcher['workingDir']} is the image's: "
            "ranks run in this directory"
        )
    world = workers * per_worker
    processes = []
    for node in range(workers):
        for local in range(per_worker):
            rank = node * per_worker + local
            argv = command if no_python else [python, "-u", *command]
            env = _ranks_env(
                env_base,
                {
                    "RANK": rank,
                    "LOCAL_RANK": local,
                    "WORLD_SIZE": world,
                    "LOCAL_WORLD_SIZE": per_worker,
                    "GROUP_RANK": node,
                    "GROUP_WORLD_SIZE": workers,
                    "ROLE_RANK": rank,
                    "ROLE_WORLD_SIZE": world,
                    "ROLE_NAME": "default",
                    "MASTER_ADDR": LOOPBACK,
                    "MASTER_PORT": rewriter.port(port),
                    "TORCHELASTIC_RESTART_COUNT": 0,
                    "TORCHELASTIC_MAX_RESTARTS": 0,
                    "TORCHELASTIC_RUN_ID": job.uid,
                },
            )
            label = f"worker-{node}" if per_worker == 1 else f"worker-{node}:{local}"
            processes.append(Process(label, ("launcher", 0), tuple(argv), env))
    notes.append(
        "ColossalAIJob: on the cluster the launcher pod runs `"
        + cluster
        + "`, which logs into every worker over ssh (workers run sshd): here there is no sshd, "
        "so each rank is started directly as that torchrun line would start it on its worker, "
        "with the launcher's environment; the ranks together stand for the launcher, whose "
        "exit (1 when any rank fails) decides the job"
    )
    return LocalJob(
        kind,
        view,
        tuple(processes),
        files,
        tuple(notes),
        failed_exit_code=1,
        cluster_commands={"launcher": cluster},
    )
