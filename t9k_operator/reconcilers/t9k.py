"""What the job kinds share: reading the T9k ``runPolicy``/``runMode`` fields
into the engine's terms, building a JobView, checking an object against its
API model, and the hook defaults most kinds keep (:class:`KindDefaults`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import ValidationError

from t9k_operator.reconcilers.engine import JobView, Outcome, Override, Role
from t9k_operator.reconcilers.pods import ReplicaState

Obj = dict[str, Any]


class _Parses(Protocol):
    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Any: ...


def user_path(obj: Any, loc: Sequence[int | str]) -> str:
    """The field path a user wrote, from a pydantic error location: the longest
    prefix of ``loc`` that exists in ``obj`` (pydantic adds the names of union
    branches and validators, such as ``constrained-str``, which are not fields),
    plus the first missing field name if that is where it stops."""
    parts: list[str] = []
    node = obj
    for item in loc:
        if isinstance(node, Mapping) and isinstance(item, str) and item in node:
            parts.append(item)
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
            node = node[item]
        else:
            if isinstance(node, Mapping) and isinstance(item, str) and item.isidentifier():
                parts.append(item)  # a required field that is missing
            break
    return ".".join(parts)


def model_error(model: type[_Parses], job: Mapping[str, Any]) -> str | None:
    """The first error of the kind's API model on this object, as
    ``invalid spec: field.path: message`` (None when it parses). Admission
    stops these normally; an object stored before the CRD's rules is not."""
    try:
        model.from_dict(job)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = user_path(job, err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return f"invalid spec: {path}: {message}"
    return None


def _overrides(items: Any) -> tuple[Override, ...]:
    out = []
    for item in items or []:
        cmd = item.get("command")
        args = item.get("args")
        out.append(Override(
            type=str(item.get("type", "")),
            command=tuple(str(c) for c in cmd) if cmd else None,
            args=tuple(str(a) for a in args) if args else None,
            skip_init_container=bool(item.get("skipInitContainer")),
        ))  # fmt: skip
    return tuple(out)


def run_policy_view(job: Mapping[str, Any]) -> dict[str, Any]:
    """The runPolicy / runMode fields every T9k kind shares, as JobView kwargs."""
    spec = job.get("spec") or {}
    policy = spec.get("runPolicy") or {}
    mode = spec.get("runMode") or {}
    debug = mode.get("debug") or {}
    pause = mode.get("pause") or {}
    deadline = policy.get("activeDeadlineSeconds")
    return {
        "backoff_limit": int(policy.get("backoffLimit", 3)),
        "active_deadline_seconds": int(deadline) if deadline is not None else None,
        "cleanup_policy": str(policy.get("cleanUpPolicy") or "None"),
        "debug": bool(debug.get("enabled")),
        "debug_overrides": _overrides(debug.get("replicaSpecs")),
        "paused": bool(pause.get("enabled")),
        "resume_overrides": _overrides(pause.get("resumeSpecs")),
    }


def job_view(
    kind: str, job: Mapping[str, Any], roles: tuple[Role, ...], error: str | None, **fields: Any
) -> JobView:
    """A JobView from the job's metadata and status, plus the kind's fields."""
    meta = job["metadata"]
    return JobView(
        kind=kind, namespace=meta["namespace"], name=meta["name"], uid=meta["uid"],
        generation=int(meta.get("generation") or 0), roles=() if error else roles,
        status=fields.pop("status", None) or job.get("status") or {}, spec_error=error,
        **fields,
    )  # fmt: skip


def succeeded_with(state: ReplicaState | None) -> Outcome | None:
    """The job's success when the replica that decides it (the master, worker-0,
    the launcher) has succeeded; None while it has not."""
    if state is not None and state.phase == "Succeeded":
        return Outcome("Succeeded", "Succeeded", "The job has finished successfully.")
    return None


def present_fields(obj: Any, paths: Sequence[str]) -> list[str]:
    """Which of ``paths`` (dotted; ``[]`` stands for every item of a list) ``obj``
    sets to something other than null."""
    found: list[str] = []
    for path in paths:
        nodes: list[Any] = [obj]
        for part in path.split("."):
            key, each = (part[:-2], True) if part.endswith("[]") else (part, False)
            nodes = [n.get(key) for n in nodes if isinstance(n, Mapping)]
            nodes = [n for n in nodes if n is not None]
            if each:
                nodes = [item for n in nodes if isinstance(n, list) for item in n]
        if nodes:
            found.append(path)
    return found


class KindDefaults:
    """Hook defaults most kinds share: create any role at once, clean up every
    type, store the engine's status as it is, no ssh."""

    uses_ssh = False
    not_acted_on: tuple[str, ...] = ()
    """Fields the API stores but this operator does not act on (yet): a job
    that sets one gets a Warning Event saying so."""

    def fields_not_acted_on(self, job: Mapping[str, Any]) -> list[str]:
        return present_fields(job, self.not_acted_on)

    def may_create(
        self, job: JobView, replica_type: str, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> bool:
        return True

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return None

    def render_status(self, job: Mapping[str, Any], engine_status: Obj) -> Obj:
        return engine_status

    def ssh_secret(self, job: Mapping[str, Any], private_key: str, public_key: str) -> Obj | None:
        return None
