"""ColossalAIJob: the kind's hooks for the shared engine.

Roles: ``launcher`` (one pod, ``<job>-launcher``) and ``worker``. Neither is
ever restarted (seed 003: a worker that comes back cannot rejoin a running
``colossalai run``; a relaunch would start over on busy workers), so any pod
failing fails the job at once with the reason. The launcher's success is the
job's. ``runPolicy.cleanUpWorkers`` deletes the workers when the job ends and
keeps the launcher for its logs. Debug pods run ``sleep inf``.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from typing import ClassVar

from t9k_operator.api.colossalai import CRD, ColossalAIJobSpec, training_container
from t9k_operator.api.deepspeed_config import command_argv
from t9k_operator.api.template import named_container
from t9k_operator.builders import colossalai as build
from t9k_operator.builders.colossalai import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.asks import hang_policy, with_tensorboard
from t9k_operator.kinds.contract import KindBase, job_view
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.local import (
    LOOPBACK,
    Here,
    Launch,
    Process,
    Program,
    Replica,
    rank_env,
    split_python,
)
from t9k_operator.kinds.t9k import (
    DecidedByOneReplica,
    LaunchedOverSsh,
    LauncherBuilders,
    run_mode_view,
    scheduling_request,
)
from t9k_operator.kinds.view import JobView, Role, asks_of
from t9k_operator.objects import Obj


def spec_error(spec: ColossalAIJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    if spec.launcher is not None and not spec.launcher.image:
        return "spec.launcher.image is empty: name the image the launcher runs colossalai from"
    worker = spec.path_of("worker")
    if not (spec.workers.template.get("spec") or {}).get("containers"):
        return f"{worker}.template.spec.containers is empty: give the worker a container"
    template = spec.launcher_template
    if template is not None and named_container(template, build.LAUNCHER) is None:
        image = (training_container(spec.workers.template) or {}).get("image")
        if not image:
            return (
                f"{worker}.template: the launcher takes the image of the workers' container, "
                "which names none: name it, or give the launcher a container named launcher"
            )
    return None


class ColossalAIKind(
    LaunchedOverSsh, DecidedByOneReplica, KindBase[Job], crd=CRD, model=Job, facts=build.FACTS
):
    cli_name = "colossalai"
    pausable = True
    not_acted_on: tuple[str, ...] = (
        "spec.runPolicy.backoffLimit",
        "spec.replicaSpecs[].restartPolicy",
    )
    pod_templates: tuple[str, ...] = ("spec.worker.template", "spec.replicaSpecs[].template")
    launcher_builders: ClassVar[LauncherBuilders] = build

    def view(self, job: Job) -> JobView:
        spec = job.spec
        # No pod is ever restarted (see the module docstring): restart policy Never,
        # and backoffLimit, stored but not acted on, is not read.
        workers = spec.workers.replicas
        roles = (Role("launcher", 1, "Never"), Role("worker", workers, "Never"))
        return job_view(
            CRD.kind,
            job.metadata,
            roles,
            spec_error(spec),
            active_deadline_seconds=spec.run_policy.active_deadline_seconds,
            cleanup_policy="All" if spec.run_policy.clean_up_workers else "None",
            asks=asks_of(
                scheduling_request(spec.scheduler, 1 + workers),  # all of it
                # A hung ColossalAIJob fails whatever onHang says: it restarts no pod.
                hang_policy(spec.run_policy.progress, restarts=False),
                with_tensorboard(spec),
            ),
            **run_mode_view(spec.run_mode),
        )

    def from_flags(self, request: JobRequest) -> Obj:
        """A launcher of the image, and workers running the script with a process per GPU."""
        argv = flags.command(request)
        container = flags.container(self.training_containers[0], request, None)
        spec: Obj = {
            "launcher": {"image": request.image},
            "worker": {
                "replicas": request.workers,
                "procPerWorker": request.slots,
                "command": flags.script(argv),
                "template": flags.template(container, request),
            },
        }
        return flags.t9k_extras(spec, request)

    @property
    def local(self) -> ColossalAILocal:
        return ColossalAILocal()


# -- t9k run --local -----------------------------------------------------------------------


class ColossalAILocal:
    """The launcher pod runs ``colossalai run``, which logs into every worker
    over ssh and starts a ``torchrun`` line there; without sshd here, every rank
    is started directly as that line would start it, with the launcher's
    environment. A program given after ``--`` becomes ``worker.command`` (in
    the 2025 layout ``torchConfig.script``): a script Python runs, or a command
    each rank runs as is."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        spec = out.setdefault("spec", {})
        if "replicaSpecs" in spec:
            place, key = spec.setdefault("torchConfig", {}), "script"
        else:
            place, key = spec.setdefault("worker", {}), "command"
        python, script = split_python(argv)
        if script and not script[0].startswith("-"):
            place[key] = script
            return Program(out, python)
        place[key] = list(argv)
        return Program(out, as_is=True)

    def launch(self, job: Job, replicas: Mapping[str, Replica], here: Here) -> Launch:
        w = job.spec.workers
        workers, per_worker = w.replicas, int(w.proc_per_worker)
        extra = build.extra_launch_args(w.torch_args)
        overrides = dict(kv.split("=", 1) for kv in extra.split(",") if "=" in kv) if extra else {}
        port = here.port(int(overrides.get("master_port", build.MASTER_PORT)))
        ignored = [kv for kv in extra.split(",") if kv and kv.split("=")[0] != "master_port"]
        if ignored:
            here.note(f"torchrun arguments not applied locally: {','.join(ignored)}")
        cluster = shlex.join(build.colossalai_command(job))
        launcher = replicas["launcher"]
        env_base = here.env(launcher.env)
        env_base.pop("HOSTNAME", None)
        command = [here.text(str(a)) for a in command_argv(list(w.command or []))]
        if launcher.container.get("workingDir"):
            here.note(
                f"the launcher's workingDir {launcher.container['workingDir']} is the image's: "
                "ranks run in this directory"
            )
        world = workers * per_worker
        processes = []
        for node in range(workers):
            for local in range(per_worker):
                rank = node * per_worker + local
                argv = command if here.as_is else [here.python, "-u", *command]
                env = rank_env(
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
                        "MASTER_PORT": port,
                        "TORCHELASTIC_RESTART_COUNT": 0,
                        "TORCHELASTIC_MAX_RESTARTS": 0,
                        "TORCHELASTIC_RUN_ID": job.uid,
                    },
                )
                label = f"worker-{node}" if per_worker == 1 else f"worker-{node}:{local}"
                processes.append(Process(label, ("launcher", 0), tuple(argv), env))
        here.note(
            f"ColossalAIJob: on the cluster the launcher pod runs `{cluster}`, which logs into "
            "every worker over ssh (workers run sshd): here there is no sshd, so each rank is "
            "started directly as that torchrun line would start it on its worker, with the "
            "launcher's environment; the ranks together stand for the launcher, whose exit "
            "(1 when any rank fails) decides the job"
        )
        # The launcher exits 1 whichever host failed.
        return Launch("launcher", cluster, tuple(processes), failed_exit_code=1)
