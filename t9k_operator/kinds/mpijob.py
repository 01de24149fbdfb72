"""MPIJob: the kind's hooks for the shared engine.

Roles: ``launcher`` (one pod, ``<job>-launcher``) and ``worker``, read from
``job.spec.run`` whichever layout the spec is written in. In the older layout
neither is ever restarted (a rank cannot rejoin a running ``mpirun``; a
relaunched mpirun would start the program over on busy workers), so any pod
failing fails the job at once with the reason; in the 2025 layout each
type's ``restartPolicy`` says (its limits summed are the job's backoff
limit). The launcher's exit is mpirun's and
decides the job: 0 completes it (condition Completed, phase Succeeded: the
program ended, its log tells how), anything else fails it.
``runPolicy.cleanUpWorkers`` deletes the workers when the job ends and keeps
the launcher for its log. In debug mode the launcher runs ``sleep inf`` and
the workers sshd.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from typing import ClassVar

from t9k_operator.api.mpijob import CRD, MPIJobSpec
from t9k_operator.builders import mpijob as build
from t9k_operator.builders.mpijob import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.asks import hang_policy
from t9k_operator.kinds.contract import KindBase, job_view
from t9k_operator.kinds.flags import JobRequest, NotForThisKind
from t9k_operator.kinds.local import LOOPBACK, Here, Launch, Process, Program, Replica
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.t9k import (
    LaunchedOverSsh,
    LauncherBuilders,
    run_mode_view,
    scheduling_request,
)
from t9k_operator.kinds.view import JobView, Outcome, Role, asks_of
from t9k_operator.objects import Obj

MASTER_PORT = 29500
"""The port ``t9k run --local`` offers as MASTER_PORT (a free one standing for it)."""
COMPLETED = Outcome(
    "Succeeded",
    "Completed",
    "mpirun exited 0: the MPI program has ended; the launcher's log tells how it went.",
)


def spec_error(spec: MPIJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    run = spec.run
    if not (run.worker_template.get("spec") or {}).get("containers"):
        return f"{run.worker_field}.spec.containers is empty: give the worker a container"
    if not spec.debug_enabled and not run.program:
        return (
            f"{run.program_field} is empty: name the MPI program mpirun runs on the workers "
            "(e.g. [python3, train.py])"
        )
    return None


class MPIJobKind(LaunchedOverSsh, KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "mpi"
    pausable = True
    launcher_builders: ClassVar[LauncherBuilders] = build
    pod_templates: tuple[str, ...] = ("spec.worker.template", "spec.replicaSpecs[].template")

    def view(self, job: Job) -> JobView:
        spec = job.spec
        run = spec.run
        launcher, worker = run.launcher_restart, run.worker_restart
        roles = (
            Role("launcher", 1, launcher.policy, launcher.limit),
            Role("worker", run.replicas, worker.policy, worker.limit),
        )
        return job_view(
            CRD.kind,
            job.metadata,
            roles,
            spec_error(spec),
            asks=asks_of(
                scheduling_request(spec.scheduler, 1 + run.replicas),  # launcher, workers
                # A hung MPIJob fails whatever onHang says: it restarts no pod.
                hang_policy(spec.run_policy.progress, restarts=False),
            ),
            backoff_limit=sum(r.restart_limit or 0 for r in roles),
            cleanup_policy="All" if spec.run_policy.clean_up_workers else "None",
            **run_mode_view(spec.run_mode),
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        state = replicas.get(self.deciding_replica(job))
        return COMPLETED if state is not None and state.phase == "Succeeded" else None

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers of the image, mpirun running the command with a process per GPU
        (one without GPUs) on each."""
        if request.tensorboard:
            raise NotForThisKind("an MPIJob has no TensorBoard (spec.tensorboardSpec)")
        argv = flags.command(request)
        container = flags.container(self.training_containers[0], request, None)
        spec: Obj = {
            "worker": {
                "replicas": request.workers,
                "extraMPIArgs": ["-N", str(request.slots)],
                "cmd": argv,
                "template": flags.template(container, request),
            },
        }
        return flags.t9k_extras(spec, request)

    @property
    def local(self) -> MPILocal:
        return MPILocal()


# -- t9k run --local -----------------------------------------------------------------------


class MPILocal:
    """The launcher runs ``mpirun`` over the workers' hostfile, reaching each
    worker over ssh; here there are no workers and no sshd, so mpirun runs on
    this machine alone, one rank per worker, with the launcher's environment,
    the MCA parameters and the same ``-x``. A program given after ``--``
    becomes the program (``spec.mpiConfig.script``, or ``spec.worker.cmd`` in
    the older layout), run as is."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        spec = out.setdefault("spec", {})
        if "replicaSpecs" in spec:
            spec.setdefault("mpiConfig", {})["script"] = list(argv)
        else:
            spec.setdefault("worker", {})["cmd"] = list(argv)
        return Program(out, as_is=True)

    def launch(self, job: Job, replicas: Mapping[str, Replica], here: Here) -> Launch:
        run = job.spec.run
        cluster = shlex.join(build.mpirun_command(job))
        workers = run.replicas
        argv = ["mpirun", "--oversubscribe", "-np", str(workers)]
        for key, value in run.mca.items():
            argv += ["--mca", key, value]
        for name in build.exported(job):
            argv += ["-x", name]
        argv += [here.text(str(a)) for a in run.program]
        skipped = [*build.shorthand_args(run), *run.extra_args]
        if skipped:
            here.note(f"mpirun arguments not applied locally: {' '.join(skipped)}")
        env = here.env(replicas["launcher"].env)
        env.pop("HOSTNAME", None)
        env.update(dict.fromkeys(build.RUN_AS_ROOT, "1"))
        # A program that meets its peers at an address (torch.distributed's env://,
        # the local stand-in) finds one here, as every launcher kind gives.
        env.update(MASTER_ADDR=LOOPBACK, MASTER_PORT=str(here.port(MASTER_PORT)))
        here.note(
            f"MPIJob: on the cluster the launcher runs `{cluster}`, which starts the program "
            "on every worker over ssh (workers run sshd): here mpirun runs on this machine "
            f"alone, {workers} rank(s), one per worker, with MASTER_ADDR and MASTER_PORT set "
            "(the cluster sets neither); its exit decides the job"
        )
        return Launch(
            "launcher", cluster, (Process("launcher", ("launcher", 0), tuple(argv), env),)
        )
