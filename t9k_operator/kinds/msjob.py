"""MSJob (mindspore.gitee.com/v1): the kind's hooks, compatible with the
MindSpore operator's API.

* Roles ``Scheduler`` (at most one), ``PS``, ``Worker``; the Scheduler comes up
  first and the other roles are created once its pod and Service exist.
* Success: ``successPolicy: AllWorkers`` = every Worker succeeded; default =
  Worker 0 succeeded. A replica failing beyond its restart policy fails the job;
  with ``enableDynamicWorker``, a Worker's does not (the Scheduler's and a PS's
  still do).
* ``runPolicy.cleanPodPolicy``: All (delete every pod), Running (delete the
  pods still running or pending; the default), None.
* Status in the Kubeflow shape MSJob tooling reads (conditions Created /
  Running / Restarting / Succeeded / Failed, ``replicaStatuses``), derived
  from the engine's own status, which is kept beside it (``t9kConditions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.api.msjob import CRD, ROLES, SCHEDULER, WORKER, SchedulingPolicy
from t9k_operator.builders import msjob as build
from t9k_operator.builders.msjob import Job
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.kinds import flags
from t9k_operator.kinds.asks import SchedulingRequest, hang_policy
from t9k_operator.kinds.contract import (
    ChildNotReady,
    KindBase,
    PodMode,
    Services,
    Stored,
    job_view,
)
from t9k_operator.kinds.flags import JobRequest, NotForThisKind
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import JobView, Outcome, Role, asks_of
from t9k_operator.objects import Obj


def scheduling_request(policy: SchedulingPolicy | None, replicas: int) -> SchedulingRequest:
    """What an MSJob asks of a scheduler: its schedulingPolicy, else every pod at once."""
    if policy is None:
        return SchedulingRequest(replicas)
    return SchedulingRequest(
        policy.min_available or replicas,
        queue=policy.queue,
        priority_class=policy.priority_class,
        timeout_seconds=policy.schedule_timeout_seconds,
        min_resources=policy.min_resources,
        asked_by="spec.runPolicy.schedulingPolicy",
    )


CLEAN_POD_POLICY = {"All": "All", "Running": "Unfinished", "None": "None"}


def dynamic_worker_rules(roles: tuple[Role, ...]) -> tuple[tuple[tuple[str, int], ...], ...]:
    """``enableDynamicWorker``, as the engine's failure rules: each replica but the
    Workers is a rule of its own, so any of them failing for good fails the job,
    and a Worker failing for good, in no rule, does not (as ms-operator has it)."""
    return tuple(((r.type, i),) for r in roles if r.type != WORKER for i in range(r.replicas))


@dataclass(frozen=True)
class MSJobView(JobView):
    """An MSJob in the engine's terms, with what its outcome rule reads."""

    all_workers: bool = False
    """``successPolicy: AllWorkers``: the job succeeds when every Worker has."""


class MSJobKind(KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "mindspore"
    pod_templates: tuple[str, ...] = ("spec.msReplicaSpecs{}.template",)

    def view(self, job: Job) -> JobView:
        spec = job.spec
        roles = tuple(
            Role(role, rs.replicas, rs.effective_restart_policy)
            for role in ROLES
            if (rs := spec.ms_replica_specs.get(role)) is not None
        )
        policy = spec.run_policy
        return job_view(
            CRD.kind,
            job.metadata,
            roles,
            view=MSJobView,
            backoff_limit=policy.backoff_limit,
            restart_scope=policy.restart_scope or "Replica",
            active_deadline_seconds=policy.active_deadline_seconds,
            cleanup_policy=CLEAN_POD_POLICY[policy.clean_pod_policy],
            ttl_seconds_after_finished=policy.ttl_seconds_after_finished,
            asks=asks_of(
                scheduling_request(policy.scheduling_policy, sum(r.replicas for r in roles)),
                hang_policy(policy.progress),
            ),
            all_workers=spec.success_policy == "AllWorkers",
            failure_rules=dynamic_worker_rules(roles) if spec.enable_dynamic_worker else None,
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        workers = next((r.replicas for r in job.roles if r.type == WORKER), 0)
        if workers == 0:
            return None
        spec_all = isinstance(job, MSJobView) and job.all_workers
        wanted = [(WORKER, i) for i in range(workers)] if spec_all else [self.deciding_replica(job)]
        states = [replicas.get(replica) for replica in wanted]
        if all(s is not None and s.phase == "Succeeded" for s in states):
            who = "every Worker" if spec_all else "Worker 0"
            return Outcome("Succeeded", "MSJobSucceeded", f"{who} succeeded.")
        return None

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return (WORKER, 0)  # with successPolicy AllWorkers, the first of them

    def may_create(
        self, job: JobView, replica_type: str, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> bool:
        has_scheduler = any(r.type == SCHEDULER and r.replicas for r in job.roles)
        return replica_type == SCHEDULER or not has_scheduler or (SCHEDULER, 0) in replicas

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        ip = None
        if type_ != SCHEDULER and job.spec.replicas(SCHEDULER):
            scheduler = svc.get(build.scheduler_service_name(job.name)) or {}
            ip = (scheduler.get("spec") or {}).get("clusterIP")
            if not ip:
                raise ChildNotReady("the scheduler Service has no ClusterIP yet")
        return build.build_pod(job, type_, index, scheduler_ip=ip, mode=mode)

    def role_pod(self, job: Job, type_: str) -> Obj:
        return build.build_pod(job, type_, 0, scheduler_ip=None)

    def extras(self, job: Job) -> list[Obj]:
        out = [build.build_service(job)]
        if job.spec.replicas(SCHEDULER):
            out.append(build.scheduler_service(job))
        return out

    def from_flags(self, request: JobRequest) -> Obj:
        """A Scheduler (no GPU) and Workers of the command; ``--queue`` and
        ``--priority`` go to the schedulingPolicy."""
        argv = flags.command(request)
        if request.tensorboard:
            raise NotForThisKind("an MSJob has no tensorboardSpec: create a TensorBoard of its own")
        name = self.training_containers[0]
        worker = flags.template(flags.container(name, request, argv), request)
        scheduler = flags.template(flags.container(name, request, argv, gpus=False), request)
        spec: Obj = {
            "msReplicaSpecs": {
                SCHEDULER: {"replicas": 1, "restartPolicy": "Never", "template": scheduler},
                WORKER: {
                    "replicas": request.workers,
                    "restartPolicy": "OnFailure",
                    "template": worker,
                },
            }
        }
        policy: Obj = {}
        if request.queue:
            policy["queue"] = request.queue
        if request.priority is not None:
            policy["priorityClass"] = priority_class(request.priority)
        if policy:
            spec["runPolicy"] = {"schedulingPolicy": policy}
        return spec

    def engine_status(self, job: Stored) -> Obj:
        """What the engine wrote last time, from the stored status."""
        status = dict(job.get("status") or {})
        status["conditions"] = list(status.get("t9kConditions") or [])
        for key in ("t9kConditions", "replicaStatuses", "lastReconcileTime"):
            status.pop(key, None)
        return status

    def render_status(self, job: Stored, engine: Obj) -> Obj:
        prev = job.get("status") or {}
        out = dict(engine)
        out["t9kConditions"] = engine.get("conditions") or []
        out["conditions"] = kubeflow_conditions(prev.get("conditions") or [], engine)
        out["replicaStatuses"] = replica_statuses(engine)
        return out


def _engine_cond(engine: Mapping[str, Any], type_: str) -> Obj:
    for c in engine.get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return {}


def kubeflow_conditions(prev: list[Obj], engine: Mapping[str, Any]) -> list[Obj]:
    """Created / Running / Restarting / Succeeded / Failed, as Kubeflow writes
    them: a type appears once it has happened, and a time moves only when its
    status does."""
    latest = max(
        (str(c.get("lastTransitionTime") or "") for c in engine.get("conditions") or []), default=""
    ) or str(engine.get("startTime"))
    return _stamped(prev, engine, _wanted_conditions(prev, engine), latest)


_Wanted = tuple[str, str, str, str]
"""A Kubeflow condition the job shows: its type, status, reason and message."""

# When a Kubeflow condition moves, the engine condition it mirrors moved in
# the same pass: its lastTransitionTime is the moment of the change.
_MIRRORS = {
    "Created": "Initialized",
    "Running": "Running",
    "Restarting": "ReplicaFailure",
    "Succeeded": "Completed",
    "Failed": "Failed",
}


def _wanted_conditions(prev: list[Obj], engine: Mapping[str, Any]) -> list[_Wanted]:
    """The conditions the job shows now, in Kubeflow's order: Created, then
    Running, Restarting and the outcome once each has happened."""
    phase = engine.get("phase")
    wanted: list[_Wanted] = [
        ("Created", "True", "MSJobCreated", "The MSJob has been created."),
    ]
    replica_failure = _engine_cond(engine, "ReplicaFailure")
    wanted += _running_condition(prev, phase, replica_failure)
    wanted += _restarting_condition(prev, phase, replica_failure)
    wanted += _outcome_conditions(engine, phase)
    return wanted


def _running_condition(prev: list[Obj], phase: Any, replica_failure: Obj) -> list[_Wanted]:
    """Running: Unknown while a replica is on a lost node, True while the job
    runs, False once it has run (or ended) and runs no more; none before."""
    if phase == "Unknown":  # a replica on a lost node: nobody knows whether it runs
        why = str(replica_failure.get("message") or "")
        return [("Running", "Unknown", "MSJobNodeNotReady", why)]
    if phase in ("Running", "Succeeded", "Failed") or any(c["type"] == "Running" for c in prev):
        running = phase == "Running"
        return [
            (
                "Running",
                "True" if running else "False",
                "MSJobRunning" if running else f"MSJob{phase}",
                "The MSJob is running." if running else "The MSJob is not running.",
            )
        ]
    return []


def _restarting_condition(prev: list[Obj], phase: Any, replica_failure: Obj) -> list[_Wanted]:
    """Restarting: True while a replica fails and the job goes on, False once
    none does after one has; none before."""
    if replica_failure.get("status") == "True" and phase not in ("Succeeded", "Failed", "Unknown"):
        return [("Restarting", "True", "MSJobRestarting", replica_failure["message"])]
    if any(c["type"] == "Restarting" for c in prev):
        return [("Restarting", "False", "MSJobRestarted", "No replica is failing.")]
    return []


def _outcome_conditions(engine: Mapping[str, Any], phase: Any) -> list[_Wanted]:
    """Succeeded or Failed once the job has ended so, with the engine's words."""
    wanted: list[_Wanted] = []
    if phase == "Succeeded":
        message = _engine_cond(engine, "Completed").get("message", "")
        wanted.append(("Succeeded", "True", "MSJobSucceeded", message))
    if phase == "Failed":
        failed = _engine_cond(engine, "Failed")
        wanted.append(
            ("Failed", "True", failed.get("reason", "MSJobFailed"), failed.get("message", ""))
        )
    return wanted


def _stamped(
    prev: list[Obj], engine: Mapping[str, Any], wanted: list[_Wanted], latest: str
) -> list[Obj]:
    """``wanted`` as conditions: one whose status has not changed keeps its
    times; a new or changed one takes the time of the engine condition it
    mirrors (Created: the job's start), else ``latest``."""
    by_type = {c["type"]: c for c in prev}
    out = []
    for type_, status, reason, message in wanted:
        old = by_type.get(type_)
        if old is not None and old.get("status") == status:
            out.append({**old, "reason": reason, "message": message})
            continue
        stamp = _engine_cond(engine, _MIRRORS[type_]).get("lastTransitionTime") or latest
        if type_ == "Created":
            stamp = str(engine.get("startTime") or stamp)  # created when it started
        out.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastUpdateTime": stamp,
                "lastTransitionTime": stamp,
            }
        )
    return out


def replica_statuses(engine: Mapping[str, Any]) -> Obj:
    out: Obj = {}
    for task in engine.get("tasks") or []:
        counts = {"active": 0, "succeeded": 0, "failed": 0}
        for r in task.get("replicas") or []:
            phase = r.get("phase")
            if phase in ("Running", "Pending"):
                counts["active"] += 1
            elif phase == "Succeeded":
                counts["succeeded"] += 1
            elif phase == "Failed":
                counts["failed"] += 1
        out[task["type"]] = counts
    return out
