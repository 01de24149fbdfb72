"""GenericJob: the kind's hooks for the shared engine.

A GenericJob ends by its rules: it succeeds once every replica of one
``successRules`` item has succeeded (no rules: every replica), and fails once
every replica of one ``failureRules`` item has failed for good (no rules: any
one; the engine judges it from the view's ``failure_rules``). Each replica
type restarts within its own ``restartPolicy.limit``; the job's shared limit
is their sum. A template variable the job cannot fill in fails the job with
a condition naming the field and the variable.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from t9k_operator.api.genericjob import CRD, GenericJobSpec
from t9k_operator.builders import genericjob as build
from t9k_operator.builders.genericjob import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.asks import checkpoint_on_stop, hang_policy, with_tensorboard
from t9k_operator.kinds.contract import KindBase, PodMode, Services, job_view
from t9k_operator.kinds.flags import JobRequest, NotForThisKind
from t9k_operator.kinds.local import EachReplica, Program
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.t9k import containerless_replica, run_mode_view, scheduling_request
from t9k_operator.kinds.view import JobView, Outcome, Role, asks_of
from t9k_operator.objects import Obj, training_container

Replicas = tuple[tuple[str, int], ...]


def _sets(rules: Sequence[Mapping[str, Sequence[int]]]) -> tuple[Replicas, ...]:
    return tuple(tuple((t, i) for t, ranks in rule.items() for i in ranks) for rule in rules)


def spec_error(job: Job) -> str | None:
    """What the model lets through but no pod can be built from."""
    templates = [rs.template for rs in job.spec.replica_specs]
    return containerless_replica(templates) or build.variable_error(job)


@dataclass(frozen=True)
class GenericJobView(JobView):
    """A GenericJob in the engine's terms, with what its outcome rule reads."""

    success_rules: tuple[Replicas, ...] = ()
    """Sets of replicas, one of which all succeeded is the job's success (none:
    every replica)."""


def _roles(spec: GenericJobSpec) -> tuple[Role, ...]:
    return tuple(
        Role(rs.type, rs.replicas, rs.restart_policy.policy, rs.restart_policy.limit)
        for rs in spec.replica_specs
    )


class GenericJobKind(KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "generic"
    pausable = True
    not_acted_on: tuple[str, ...] = (
        "spec.service.ports[].targetPort",
        "spec.service.ports[].nodePort",
    )
    pod_templates: tuple[str, ...] = ("spec.replicaSpecs[].template",)

    def view(self, job: Job) -> JobView:
        spec = job.spec
        roles = _roles(spec)
        return job_view(
            CRD.kind,
            job.metadata,
            roles,
            spec_error(job),
            view=GenericJobView,
            backoff_limit=sum(r.restart_limit or 0 for r in roles),
            cleanup_policy=spec.clean_up_policy,
            restart_scope=spec.run_policy.restart_scope or "Replica",
            active_deadline_seconds=spec.run_policy.active_deadline_seconds,
            failure_rules=_sets(spec.failure_rules) if spec.failure_rules else None,
            success_rules=_sets(spec.success_rules),
            asks=asks_of(
                scheduling_request(spec.scheduler, sum(r.replicas for r in roles)),
                hang_policy(spec.run_policy.progress),
                checkpoint_on_stop(spec.run_policy.checkpoint),
                with_tensorboard(spec),
            ),
            **run_mode_view(spec.run_mode),
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        rules = job.success_rules if isinstance(job, GenericJobView) else ()
        if not rules:
            everyone = tuple((r.type, i) for r in job.roles for i in range(r.replicas))
            rules = (everyone,) if everyone else ()
        for rule in rules:
            states = [replicas.get(key) for key in rule]
            if rule and all(s is not None and s.phase == "Succeeded" for s in states):
                named = ", ".join(f"{t}-{i}" for t, i in rule)
                message = f"The job has finished successfully: replicas {named} have succeeded."
                return Outcome("Succeeded", "Succeeded", message)
        return None

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        """The first replica of the first success rule, else the first replica."""
        rules = job.success_rules if isinstance(job, GenericJobView) else ()
        for rule in rules:
            if rule:
                return rule[0]
        for role in job.roles:
            if role.replicas:
                return (role.type, 0)
        return (job.roles[0].type, 0) if job.roles else ("worker", 0)

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, type_, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return build.build_services(job)

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers of the command, the job done when every worker is."""
        if request.torchrun:
            raise NotForThisKind("--torchrun is for pytorch jobs")
        argv = flags.command(request)
        container = flags.container(self.training_containers[0], request, argv)
        return flags.t9k_extras(flags.workers(container, request, restart_policy=None), request)

    @property
    def local(self) -> GenericLocal:
        return GenericLocal()


# -- t9k run --local -----------------------------------------------------------------------


class GenericLocal(EachReplica):
    """Each replica runs its first container; a program given after ``--``
    replaces that container's command in every replica type (its args dropped)."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        for rs in (out.get("spec") or {}).get("replicaSpecs") or []:
            c = training_container(rs.get("template") or {}, build.TRAINING_CONTAINERS)
            if c is not None:
                c["command"] = list(argv)
                c.pop("args", None)
        return Program(out)
