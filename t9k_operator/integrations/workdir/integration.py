"""A job's workdir: a packed directory its replicas find unpacked at their
working directory (docs/workdir.md).

A job asks for one with its annotation ``batch.tensorstack.dev/workdir``
(``integrations/workdir/build.py``: the same for every kind, no API field), naming a
ConfigMap that ``t9k`` or the SDK creates right after the job, owned by it and
labelled as its children are. Per job, this integration (always on)

- observes that ConfigMap in the operator's cache of the jobs' ConfigMaps;
- while it is missing, creates no pod. For the first :data:`GRACE` seconds
  of the job (``t9k`` creates the ConfigMap a moment after the job) it waits
  quietly: a gate (``Initialized`` False, reason ``WaitingForWorkdir``) and a
  look again shortly (``children`` raises ``ChildNotReady``); after that,
  ``children`` raises
  :class:`~t9k_operator.reconcilers.pipeline.contract.Unavailable`, so the
  job waits with a ``FailedCreate`` condition and Warning naming the
  ConfigMap and the annotation, retried with backoff. The ConfigMap's
  creation reconciles the job at once;
- fails the job (reason ``WorkdirMissing``) when it is still missing once the
  job's pod start timeout has run out since the job was created and the job
  has never left ``Pending`` (a running job keeps its pods), or when the
  annotation names no possible ConfigMap or one without the archive;
- decorates every new pod with the volume, the init container that unpacks
  it and the working directory (``build.add_workdir``).

Pure: times are given, never read.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, replace

from t9k_operator.integrations.workdir import build
from t9k_operator.kinds.contract import DEFAULT_START_TIMEOUT, ChildNotReady
from t9k_operator.kinds.view import Gate, Hold, JobView
from t9k_operator.objects import Obj, parse_time
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    JobInput,
    Rule,
    Templates,
    Unavailable,
)
from t9k_operator.resources import CONFIGMAPS

MISSING = "WorkdirMissing"
"""The Failed reason of a job whose workdir cannot be had."""
WAITING = "WaitingForWorkdir"
"""The reason of a young job's gate while its ConfigMap is not there yet."""
GRACE = 10.0
"""Seconds after a job's creation in which a missing workdir is expected (its
ConfigMap is created right after it) rather than warned about."""
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class WorkdirState:
    """The job's workdir ConfigMap: its name, and whether it is there."""

    config_map: str
    present: bool
    young: bool = False  # within GRACE of the job's creation


class Workdir(Base[WorkdirState]):
    """The workdir integration (always on; a job without the annotation is
    none of its business)."""

    name = "workdir"

    def __init__(self, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.start_timeout = start_timeout  # for a job that sets none

    @staticmethod
    def from_flags(args: argparse.Namespace) -> Workdir:
        return Workdir(float(getattr(args, "pod_start_timeout", DEFAULT_START_TIMEOUT)))

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return ()  # it reads the ConfigMaps the operator already watches as the jobs' children

    def observe(self, job: JobInput, caches: Caches) -> tuple[WorkdirState, JobView] | None:
        meta = job.stored.get("metadata") or {}
        name = (meta.get("annotations") or {}).get(build.ANNOTATION)
        if name is None:
            return None
        view = job.view
        problem = None
        found = None
        if not isinstance(name, str) or len(name) > 253 or not _NAME.fullmatch(name):
            problem = (
                f"the annotation {build.ANNOTATION} is {name!r}, not the name of a ConfigMap; "
                "fix it and resubmit"
            )
        else:
            found = caches.get(CONFIGMAPS, view.namespace, name)
            if found is not None and build.ARCHIVE_KEY not in (found.get("binaryData") or {}):
                problem = (
                    f"ConfigMap {name}, the job's workdir (annotation {build.ANNOTATION}), has no "
                    f"binaryData key {build.ARCHIVE_KEY}; create the job with t9k or the SDK's "
                    "workdir option"
                )
            elif found is None and _never_ran(view) and self._late(job, meta):
                problem = (
                    f"ConfigMap {name}, the job's workdir (annotation {build.ANNOTATION}), did not "
                    "appear within the job's pod start timeout; resubmit the job with its workdir"
                )
        if problem and view.spec_error is None:
            view = replace(view, spec_error=problem, spec_error_reason=MISSING)
        young = _age(job, meta) < GRACE
        return WorkdirState(str(name), found is not None, young), view

    def _late(self, job: JobInput, meta: Obj) -> bool:
        timeout = job.view.start_timeout
        timeout = self.start_timeout if timeout is None else timeout
        return bool(timeout) and _age(job, meta) >= timeout

    def gate(self, state: WorkdirState, view: JobView) -> Gate | None:
        if state.present or not state.young:
            return None
        return Gate(WAITING, _waiting(state), Hold.NEW)

    def children(
        self, state: WorkdirState, view: JobView, templates: Templates, pods: int
    ) -> list[Action]:
        if state.present:
            return []
        if state.young:
            raise ChildNotReady(_waiting(state))
        raise Unavailable(
            "its pods",
            f"ConfigMap {state.config_map}",
            f"the job's workdir (annotation {build.ANNOTATION}) does not exist yet",
        )

    def decorate(self, state: WorkdirState, view: JobView, pod: Obj) -> None:
        build.add_workdir(pod, state.config_map)


def _waiting(state: WorkdirState) -> str:
    return (
        f"waiting for ConfigMap {state.config_map}, the job's workdir "
        f"(annotation {build.ANNOTATION})"
    )


def _never_ran(view: JobView) -> bool:
    """Whether the job is still where it began (a running job whose ConfigMap
    went keeps its pods; only new ones wait)."""
    return view.status.get("phase") in (None, "", "Pending")


def _age(job: JobInput, meta: Obj) -> float:
    """Seconds since the job was created (infinite when not known)."""
    created = parse_time(meta.get("creationTimestamp"))
    return float("inf") if created is None else (job.now - created).total_seconds()
