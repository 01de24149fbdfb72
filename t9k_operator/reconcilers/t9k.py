"""What the job kinds share when they read a job: the T9k ``runPolicy`` and
``runMode`` fields in the engine's terms, a JobView, and an object checked
against its API model, with errors that name the user's field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from t9k_operator.api.common import ReplicaDebugSpec, ResumeSpec, RunMode, RunPolicy
from t9k_operator.reconcilers.kind import JobView, Outcome, Override, Role
from t9k_operator.reconcilers.pods import ReplicaState


class _Parses(Protocol):
    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Any: ...


M = TypeVar("M", bound=_Parses)


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


def parse(model: type[M], job: Mapping[str, Any]) -> tuple[M | None, str | None]:
    """The job parsed by its kind's API model, once per reconcile; or None and the
    first error as ``invalid spec: field.path: message``. Admission stops these
    normally; an object stored before the CRD's rules is not."""
    try:
        return model.from_dict(job), None
    except ValidationError as exc:
        err = exc.errors()[0]
        path = user_path(job, err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return None, f"invalid spec: {path}: {message}"


def _overrides(items: Sequence[ReplicaDebugSpec | ResumeSpec]) -> tuple[Override, ...]:
    return tuple(
        Override(
            type=item.type,
            command=tuple(item.command) if item.command else None,
            args=tuple(item.args) if isinstance(item, ResumeSpec) and item.args else None,
            skip_init_container=item.skip_init_container,
        )
        for item in items
    )


def run_mode_view(mode: RunMode | None) -> dict[str, Any]:
    """``spec.runMode`` (debug, pause) as JobView fields."""
    debug = mode.debug if mode is not None else None
    pause = mode.pause if mode is not None else None
    return {
        "debug": bool(debug and debug.enabled),
        "debug_overrides": _overrides(debug.replica_specs) if debug else (),
        "paused": bool(pause and pause.enabled),
        "resume_overrides": _overrides(pause.resume_specs) if pause else (),
    }


def run_policy_view(policy: RunPolicy, mode: RunMode | None) -> dict[str, Any]:
    """The T9k ``runPolicy`` and ``runMode`` as JobView fields (the models' defaults)."""
    return {
        "backoff_limit": policy.backoff_limit,
        "active_deadline_seconds": policy.active_deadline_seconds,
        "cleanup_policy": policy.clean_up_policy,
        **run_mode_view(mode),
    }


def job_view(
    kind: str, job: Mapping[str, Any], roles: tuple[Role, ...], error: str | None, **fields: Any
) -> JobView:
    """A JobView from the job's metadata and status, plus the kind's fields."""
    meta = job["metadata"]
    return JobView(
        kind=kind,
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        generation=int(meta.get("generation") or 0),
        roles=() if error else roles,
        status=fields.pop("status", None) or job.get("status") or {},
        spec_error=error,
        **fields,
    )


def succeeded_with(state: ReplicaState | None) -> Outcome | None:
    """The job's success when the replica that decides it (the master, worker-0,
    the launcher) has succeeded; None while it has not."""
    if state is not None and state.phase == "Succeeded":
        return Outcome("Succeeded", "Succeeded", "The job has finished successfully.")
    return None
