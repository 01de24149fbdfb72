"""DeepSpeedJob: the kind's hooks for the shared engine.

One replica type, ``worker``. worker-0 runs the launcher, so its exit decides
the job: success when it succeeds; a failure the restart policy does not
recover fails the job, as does any other worker failing for good (the engine
does both, at once and with the reason). Debug pods run ``/usr/sbin/sshd -D``.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence

from t9k_operator.api.deepspeed import (
    CRD,
    DeepSpeedJobSpec,
    effective_slots,
    effective_worker_count,
)
from t9k_operator.api.deepspeed_config import IGNORED_BY_CUSTOM_COMMAND, DeepSpeedConfig
from t9k_operator.builders import deepspeed as build
from t9k_operator.builders.deepspeed import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services, Stored
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
    t9k_job_view,
)
from t9k_operator.kinds.view import JobView, Role
from t9k_operator.objects import Obj


def spec_error(spec: DeepSpeedJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    if not (spec.worker.template.get("spec") or {}).get("containers"):
        return "spec.worker.template.spec.containers is empty: give the worker a container to run"
    if not spec.debug_enabled and not spec.launch_given:
        return (
            "spec.config.run needs exactly one of python, module or exec "
            "(or spec.config.customCommand the launch command)"
        )
    return None


def void_beside_custom_command(job: Stored) -> list[str]:
    """The options of spec.config a job sets (to other than their defaults) that
    its customCommand makes void, each by its path and why."""
    spec = job.get("spec") if isinstance(job, Mapping) else None
    config = spec.get("config") if isinstance(spec, Mapping) else None
    if not isinstance(config, Mapping) or config.get("customCommand") is None:
        return []
    defaults = DeepSpeedConfig().model_dump(by_alias=True)
    return [
        f"spec.config.{key} (spec.config.customCommand replaces it)"
        for key in IGNORED_BY_CUSTOM_COMMAND
        if config.get(key) is not None and config.get(key) != defaults.get(key)
    ]


def min_member(spec: DeepSpeedJobSpec) -> int:
    """Workers the job needs at once: all of them; elastic.minReplicas when elastic."""
    if spec.elastic_enabled and spec.elastic is not None and spec.elastic.min_replicas:
        return spec.elastic.min_replicas
    return effective_worker_count(spec)


class DeepSpeedKind(DecidedByOneReplica, KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "deepspeed"
    pausable = True
    pod_templates: tuple[str, ...] = ("spec.worker.template",)
    uses_ssh = True

    def view(self, job: Job) -> JobView:
        spec = job.spec
        role = Role("worker", effective_worker_count(spec), spec.worker.effective_restart_policy)
        return t9k_job_view(
            CRD.kind, job.metadata, (role,), spec_error(spec), spec, min_member(spec)
        )

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return ("worker", 0)  # it runs the launcher

    def fields_not_acted_on(self, job: Stored) -> list[str]:
        return super().fields_not_acted_on(job) + void_beside_custom_command(job)

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Job, private_key: str, public_key: str) -> Obj | None:
        return build.ssh_secret(job, private_key, public_key)

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers with a slot per GPU; deepspeed runs the script (python) or the command."""
        argv = flags.command(request)
        script = flags.script(argv)
        run = {"python": script} if script != argv else {"exec": argv}
        container = flags.container(self.training_containers[0], request, None)
        spec: Obj = {
            "config": {"slotsPerWorker": request.slots, "run": run},
            "worker": {"replicas": request.workers, "template": flags.template(container, request)},
        }
        return flags.t9k_extras(spec, request)

    @property
    def local(self) -> DeepSpeedLocal:
        return DeepSpeedLocal()


# -- t9k run --local -----------------------------------------------------------------------

MASTER_PORT = 29500
"""deepspeed's ``--master_port`` default (the first host's TCPStore port)."""
ENV_SKIPPED = frozenset({"HOSTNAME", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "TERM"})
"""What worker-0's launch script leaves out of ``.deepspeed_env`` (with T9K_*)."""


def _flag_value(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(args):
            return args[i + 1]
    return None


class DeepSpeedLocal:
    """worker-0 runs ``deepspeed``, whose launcher (pdsh) logs into every worker
    over ssh; without sshd here, every rank is started directly as
    ``deepspeed.launcher.launch`` starts it on its worker, with the environment
    ``.deepspeed_env`` carries from worker-0. A program given after ``--``
    becomes ``config.run``: ``python SCRIPT`` its ``python``, ``python -m MOD``
    its ``module``, anything else its ``exec``."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        config = out.setdefault("spec", {}).setdefault("config", {})
        config.pop("customCommand", None)  # the program given replaces the job's own
        python, script = split_python(argv)
        if script and script[0] == "-m" and len(script) > 1:
            config["run"] = {"module": script[1:]}
        elif script and not script[0].startswith("-"):
            config["run"] = {"python": script}
        else:
            python, config["run"] = None, {"exec": list(argv)}
        return Program(out, python)

    def launch(self, job: Job, replicas: Mapping[str, Replica], here: Here) -> Launch:
        cfg = build.config(job)
        if cfg.custom_command is not None:
            return _custom_launch(cfg.custom_command, replicas, here)
        workers, slots = effective_worker_count(job.spec), effective_slots(job.spec)
        other = list(cfg.other_args)
        port = here.port(int(_flag_value(other, "--master_port") or MASTER_PORT))
        cluster = shlex.join(build.deepspeed_command(job))
        ignored = [a for a in other if not a.startswith(("--master_port", "--master_addr"))]
        if ignored:
            here.note(f"deepspeed arguments not applied locally: {' '.join(ignored)}")
        if cfg.autotune != "none":
            here.note("autotuning is not run locally: the ranks train as configured")
        # worker-0's launch script writes .deepspeed_env from its environment; pdsh
        # gives the remote ranks that, not their own pods' environment.
        ds_env = {
            k: v
            for k, v in here.env(replicas["worker-0"].env).items()
            if not k.startswith("T9K_") and k not in ENV_SKIPPED and "\n" not in v
        }
        content = "".join(f"{k}={v}\n" for k, v in ds_env.items())
        here.file(".deepspeed_env", content, mounted_at=build.ENV_FILE)
        run = cfg.run
        assert run is not None  # spec_error refuses a job without one
        run_argv = [here.text(a) for a in run.argv]
        processes = []
        for node in range(workers):
            for local in range(slots):
                flag = [f"--local_rank={local}"] if cfg.local_rank else []
                if run.kind == "exec":
                    argv = [run_argv[0], *flag, *run_argv[1:]]
                elif run.kind == "module":
                    argv = [here.python, "-u", "-m", run_argv[0], *flag, *run_argv[1:]]
                else:
                    argv = [here.python, "-u", run_argv[0], *flag, *run_argv[1:]]
                env = rank_env(
                    ds_env,
                    {
                        "RANK": node * slots + local,
                        "LOCAL_RANK": local,
                        "WORLD_SIZE": workers * slots,
                        "LOCAL_SIZE": slots,
                        "CROSS_RANK": node,
                        "CROSS_SIZE": workers,
                        "MASTER_ADDR": LOOPBACK,
                        "MASTER_PORT": port,
                    },
                )
                label = f"worker-{node}" if slots == 1 else f"worker-{node}:{local}"
                processes.append(Process(label, ("worker", 0), tuple(argv), env))
        here.note(
            f"DeepSpeedJob: on the cluster worker-0 runs `{cluster}`, which reaches every "
            "worker over ssh (pdsh) and needs sshd on each: here there is no sshd, so each "
            "rank is started directly as deepspeed.launcher.launch would start it on its "
            "worker, with worker-0's environment (.deepspeed_env); the ranks together stand "
            "for worker-0, whose exit decides the job"
        )
        return Launch("worker-0", cluster, tuple(processes))


def _custom_launch(command: str, replicas: Mapping[str, Replica], here: Here) -> Launch:
    """config.customCommand, run here by bash as worker-0 would run it, with
    worker-0's environment; the other workers run sshd only, which is not here."""
    env = here.env(replicas["worker-0"].env)
    argv = ("/bin/bash", "-c", here.text(command))
    here.note(
        "DeepSpeedJob: spec.config.customCommand runs here as worker-0 runs it on the "
        "cluster; the other workers (sshd alone there) are not run, so a command that "
        "reaches them over ssh cannot reach them here"
    )
    return Launch("worker-0", command, (Process("worker-0", ("worker", 0), argv, env),))
