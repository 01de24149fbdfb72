"""A job's plan with its integrations: observe, gate, plan, and the pass's
one ordered list of :class:`~.contract.Action` s.

Pure: the caches are read through :class:`~.contract.Caches`, the engine is
the one state machine, and each integration only adds gates and heartbeats to
the job's view, its parts to the status and its actions to the list. Randomness (the
ssh key pair) comes in as a factory. The apply step and the tests plan
through :func:`plan` and :func:`assemble` alike.

:func:`assemble` turns one observation into the actions of one pass, in the
order the apply step carries them out:

1. the job's status, when it changed (it carries the restart count and the
   uids of the failed pods it was raised for, so it goes first);
2. deletes of pods (uid preconditions), then the job's own delete once its
   ttlSecondsAfterFinished has run out (nothing follows it);
3. what the integrations keep in every phase (``prepare``);
4. while the job is active, the kind's Services, ConfigMaps and ssh Secret and
   the integrations' children; else what the integrations give back;
5. one batch of the missing pods, each built once in the pass and decorated
   by the integrations.

What the last pass could not do (:class:`Recorded`) is an input: a refused
child holds the job or fails it. A held pass writes its status and deletes,
and tries no child again (4 and 5) until its backoff is due, whatever wakes
it meanwhile: each try that is refused doubles the wait, so a pass that
retried would push it out (a child of a previous job of that name, refused
until collected, would hold the job for minutes after). A refused soft
action goes back to its integration. A pod the kind cannot build from the spec
fails the job, and a child an integration cannot build yet holds it, both found
before anything is written.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from t9k_operator.builders.common import NORMAL, PodMode, ssh_secret_name
from t9k_operator.kinds.contract import ChildNotReady, JobKind, Stored
from t9k_operator.kinds.view import Gate, JobView
from t9k_operator.objects import Obj, controller_ref, copy_tree
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.pipeline import unserved
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Caches,
    Event,
    Integration,
    JobInput,
    Refusal,
    Unavailable,
)
from t9k_operator.resources import CONFIGMAPS, PODS, SECRETS, SERVICES, Resource

KIND_CHILDREN = {"Service": SERVICES, "ConfigMap": CONFIGMAPS, "Secret": SECRETS}
"""The children a kind builds besides pods, by kind."""
BUILD_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)
"""What a builder raises when a spec has a shape it cannot use (the models and
the template shape check stop these first; this is the last line)."""
KeyPair = Callable[[str], tuple[str, str]]
"""A fresh ssh key pair (private, public) for a comment: the plan's one source
of randomness, passed in."""


@dataclass(frozen=True)
class Seen:
    """One integration's state for one job."""

    integration: Integration[Any]
    state: Any


@dataclass(frozen=True)
class Problem:
    """A child the job cannot have: it fails (``fail``), or waits and retries."""

    reason: str
    message: str
    fail: bool


@dataclass(frozen=True)
class Recorded:
    """What a pass could not do, kept for the next pass to plan from."""

    problem: Problem | None = None  # a child the job could not have
    refused: tuple[tuple[Action, Refusal], ...] = ()  # soft actions, by their integration


@dataclass(frozen=True)
class Observed:
    """One job as a pass read it from the caches."""

    kind: JobKind[Any]
    resource: Resource  # the job's own API resource
    stored: Stored  # the job as cached (its status as last written)
    job: Any  # the parsed job, or None when the spec does not parse
    view: JobView
    seen: tuple[Seen, ...]
    pods: engine.Pods
    caches: Caches
    now: datetime
    unserved: tuple[str, ...] = ()  # fields asking what no integration that is on serves


@dataclass
class Steps:
    """One pass's plan: the engine's, and the actions that carry it out, in order."""

    plan: engine.Plan
    actions: list[Action] = field(default_factory=list)
    told: list[Event] = field(default_factory=list)  # once the first status is stored
    waiting: str = ""  # a child the pods need is not ready: look again shortly
    retry: bool = False  # what the last pass could not do may be cured by trying again
    held: bool = False  # held for a child it cannot have yet: retried with backoff
    quiet: bool = False  # a job another controller runs: not counted or told as accepted


def observe(
    integrations: Sequence[Integration[Any]], job: JobInput, caches: Caches
) -> tuple[JobView, tuple[Seen, ...]]:
    """Every integration's state for ``job``, in order; and the view they leave."""
    seen: list[Seen] = []
    view = job.view
    for integration in integrations:
        found = integration.observe(replace(job, view=view), caches)
        if found is not None:
            state, view = found
            seen.append(Seen(integration, state))
    return view, tuple(seen)


def gates(view: JobView, seen: Sequence[Seen]) -> tuple[Gate, ...]:
    """The gates the integrations put before the engine."""
    return tuple(g for s in seen if (g := s.integration.gate(s.state, view)) is not None)


def plan(
    kind: JobKind[Any],
    view: JobView,
    seen: Sequence[Seen],
    pods: engine.Pods,
    now: datetime,
    *,
    blocked: Sequence[Gate] = (),
    failed: tuple[str, str] | None = None,
) -> engine.Plan:
    """The engine's plan for the job behind its integrations' gates, judging
    their heartbeats, with their stop gates (made for this plan) and their
    parts of the status. ``blocked``: gates of
    the apply step's own (a child it could not create); ``failed``: (reason,
    message) that fail the job now."""
    beats = tuple(b for s in seen for b in s.integration.heartbeats(s.state, view))
    saved = tuple(c for s in seen for c in s.integration.checkpoints(s.state, view))
    gated = replace(
        view,
        gates=(*view.gates, *blocked, *gates(view, seen)),
        heartbeats=(*view.heartbeats, *beats),
        checkpoints=(*view.checkpoints, *saved),
    )
    if failed is not None:
        gated = replace(gated, spec_error=failed[1], spec_error_reason=failed[0])
    stops = [g for s in seen if (g := s.integration.stop_gate(s.state, view)) is not None]
    out = engine.plan(kind, gated, pods, now, stops)
    for s in seen:
        out.events.extend(s.integration.status(s.state, view, out.status))
    return out


class PodBuilds:
    """The pods of one pass, each built once: the integrations' templates and
    the creates read the same builds."""

    def __init__(self, kind: JobKind[Any], job: Any, services: dict[str, Obj]) -> None:
        self.kind, self.job, self.services = kind, job, services
        self._built: dict[tuple[str, int, PodMode], Obj | Exception] = {}

    def build(self, type_: str, index: int, mode: PodMode) -> Obj:
        """The pod as the kind builds it (shared: copy it before changing it)."""
        key = (type_, index, mode)
        if key not in self._built:
            try:
                self._built[key] = self.kind.build_pod(self.job, type_, index, mode, self.services)
            except Exception as exc:
                self._built[key] = exc
        built = self._built[key]
        if isinstance(built, Exception):
            raise built
        return built

    def template(self, type_: str) -> Obj:
        return self.build(type_, 0, NORMAL)


class _Cannot(Exception):
    """Found while planning: a child the job cannot have."""

    def __init__(self, problem: Problem, children: bool = False) -> None:
        super().__init__(problem.message)
        self.problem, self.children = problem, children


def assemble(obs: Observed, recorded: Recorded, key_pair: KeyPair) -> Steps:
    """The pass's plan and its actions, from what it observed and what the last
    pass recorded (see the module docstring for the order)."""
    seen = _refused(obs.seen, recorded.refused)
    retry = any(r.conflict or not r.permanent for _, r in recorded.refused)
    problem, children = recorded.problem, True
    builds = PodBuilds(obs.kind, obs.job, _services(obs))
    extras = functools.cache(lambda: _extras(obs, key_pair))  # one key pair at most
    for _ in range(3):  # a problem found planning fails the job, or holds it once
        failed = (problem.reason, problem.message) if problem and problem.fail else None
        held = () if problem is None or problem.fail else (Gate(problem.reason, problem.message),)
        out = plan(obs.kind, obs.view, seen, obs.pods, obs.now, blocked=held, failed=failed)
        try:
            steps = _steps(obs, out, seen, builds, extras, children, held=bool(held))
        except _Cannot as cannot:
            # Planned again, before anything is written: a failure outranks a hold.
            children = children and not cannot.children
            if problem is None or not problem.fail:
                problem = cannot.problem
            continue
        if held:
            out.events.append(("Warning", held[0].reason, held[0].message))
        steps.retry, steps.held = retry, bool(held)
        return steps
    raise AssertionError("planning found a problem in a job it had failed")


def _refused(seen: Sequence[Seen], refused: Sequence[tuple[Action, Refusal]]) -> tuple[Seen, ...]:
    """The integrations' states once their refused soft actions came back to them."""
    out = []
    for s in seen:
        state = s.state
        for action, refusal in refused:
            if action.by == s.integration.name:
                state = s.integration.refused(state, action, refusal)
        out.append(Seen(s.integration, state))
    return tuple(out)


def _steps(
    obs: Observed,
    out: engine.Plan,
    seen: Sequence[Seen],
    builds: PodBuilds,
    extras: Callable[[], list[Action]],
    children: bool,
    held: bool,
) -> Steps:
    """The actions that carry out ``out``, in order (the integrations' children
    only with ``children``, no child at all when ``held``); raises
    :class:`_Cannot` for a child the job cannot have."""
    stored, view = obs.stored, obs.view
    meta = stored["metadata"]
    first = not stored.get("status")
    steps = Steps(out)
    status = obs.kind.render_status(stored, out.status)
    if _changes(status, stored.get("status") or {}, obs.kind.crd.status_defaults):
        updated = {**stored, "status": status}  # read-only, as the cached job it shares
        steps.actions.append(Action("replace_status", obs.resource, updated, "the job's status"))
    if first:
        steps.told = [e for s in seen for e in s.integration.accepted(s.state, view)]
        steps.told += unserved.told(obs.unserved)
    for pod in out.delete:
        doomed = {"metadata": {"name": pod.name, "namespace": view.namespace, "uid": pod.uid}}
        steps.actions.append(Action("delete", PODS, doomed, "a pod of the job"))
    if out.delete_job:
        # Its ttlSecondsAfterFinished has run out: the job goes, and its
        # children with it (garbage collection, through their owner references).
        done = {"metadata": {"name": meta["name"], "namespace": view.namespace, "uid": view.uid}}
        steps.actions.append(Action("delete", obs.resource, done, "the finished job"))
        return steps
    if obs.job is None:
        return steps  # a spec that does not parse has failed the job: nothing to build
    for s in seen:
        steps.actions.extend(_by(s, s.integration.prepare(s.state, view)))
    # A paused job gives back what it holds once its pods go (not while a stop gate holds them).
    if out.status.get("phase") in engine.TERMINAL or (
        view.paused and out.status["phase"] == "Paused"
    ):
        for s in seen:
            steps.actions.extend(_by(s, s.integration.release(s.state, view)))
        return steps
    pods = _pods(obs, out, seen, builds)  # before the children: a spec that fails wins
    if held:
        return steps  # tried again once the hold's backoff is due
    steps.actions.extend(extras())
    if children and not _children(obs, seen, builds, steps):
        return steps
    if isinstance(pods, str):
        steps.waiting = pods
    elif pods:
        body: Obj = {
            "kind": "List",
            "metadata": {"name": meta["name"], "namespace": view.namespace},
            "items": pods,
        }
        steps.actions.append(Action("create_pods", PODS, body, "the job's pods"))
    return steps


def _children(obs: Observed, seen: Sequence[Seen], builds: PodBuilds, steps: Steps) -> bool:
    """The integrations' children, added to ``steps``; False when one waits for
    a template it reads (``steps.waiting`` says which: the pods wait with it)."""
    wanted = len(obs.pods)
    for s in seen:
        try:
            made = s.integration.children(s.state, obs.view, builds.template, wanted)
        except Unavailable as exc:
            message = f"waiting to create {exc.what} ({exc.child}: {exc.message}); retrying"
            raise _Cannot(Problem("FailedCreate", message, fail=False), children=True) from exc
        except ChildNotReady as exc:
            steps.waiting = str(exc)
            return False
        steps.actions.extend(_by(s, made))
    return True


def _changes(status: Obj, stored: Obj, defaults: Mapping[str, Any]) -> bool:
    """Whether writing ``status`` changes the ``stored`` one. The API server
    fills the CRD's defaults into a status written without them, so a status
    that lacks only those, at their defaults, is the one stored: writing it
    again would change nothing."""
    return status != stored and {**defaults, **status} != stored


def _by(s: Seen, actions: Sequence[Action]) -> list[Action]:
    return [replace(a, by=s.integration.name) for a in actions]


def _services(obs: Observed) -> dict[str, Obj]:
    return {s["metadata"]["name"]: s for s in obs.caches.owned(SERVICES, obs.view.uid)}


def _pods(
    obs: Observed, out: engine.Plan, seen: Sequence[Seen], builds: PodBuilds
) -> list[Obj] | str:
    """The plan's missing pods, decorated; or why they wait (a child not ready)."""
    pods: list[Obj] = []
    for type_, index, mode in out.create:
        try:
            pod = copy_tree(builds.build(type_, index, mode))
            for s in seen:
                s.integration.decorate(s.state, obs.view, pod)
        except ChildNotReady as exc:
            return str(exc)
        except BUILD_ERRORS as exc:
            message = (
                f"the operator cannot build the pod of replica {type_}-{index} from this "
                f"spec ({type(exc).__name__}: {exc}); fix the spec and resubmit"
            )
            raise _Cannot(Problem("InvalidSpec", message, fail=True)) from exc
        pods.append(pod)
    return pods


def _extras(obs: Observed, key_pair: KeyPair) -> list[Action]:
    """The kind's Services, ConfigMaps and ssh Secret: created when the job has
    none of that name, a ConfigMap's data kept equal to what is built (a
    hostfile follows scaling)."""
    job, uid = obs.job, obs.view.uid
    wanted = list(obs.kind.extras(job))
    secret = obs.caches.get(SECRETS, job.namespace, ssh_secret_name(job.name))
    if obs.kind.uses_ssh and (secret is None or (controller_ref(secret) or {}).get("uid") != uid):
        # A fresh key pair only when the Secret does not exist yet: never
        # shared between jobs, never rotated under running replicas.
        private, public = key_pair(f"t9k/{job.namespace}/{job.name}")
        made = obs.kind.ssh_secret(job, private, public)
        if made is not None:
            wanted.append(made)
    actions: list[Action] = []
    for child in wanted:
        resource = KIND_CHILDREN[child["kind"]]
        meta = child["metadata"]
        what = f"the job's {child['kind']}"
        existing = obs.caches.get(resource, meta["namespace"], meta["name"])
        if existing is not None and (controller_ref(existing) or {}).get("uid") != uid:
            existing = None  # not the job's: the create says whose it is
        if existing is None:
            actions.append(Action("create", resource, child, what))
        elif child["kind"] == "ConfigMap" and existing.get("data") != child.get("data"):
            updated = copy.deepcopy(existing)
            updated["data"] = child.get("data")
            actions.append(Action("replace", resource, updated, what))
    return actions
