"""What the job kinds share: reading the T9k ``runPolicy``/``runMode`` fields
into the engine's terms, building a JobView, checking an object against its
API model, and the hook defaults most kinds keep (:class:`KindDefaults`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import ValidationError

from t9k_operator.reconcilers.engine import JobView, Outcome, Override, Role
from t9k_operator.reconcilers.pods import ReplicaState

Obj = dict[str, Any]


class _Parses(Protocol):
    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Any: ...


def model_error(model: type[_Parses], job: Mapping[str, Any]) -> str | None:
    """The first error of the kind's API model on this object, as
    ``invalid spec: field.path: message`` (None when it parses). Admission
    stops these normally; an object stored before the CRD's rules is not."""
    try:
        model.from_dict(job)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = ".".join(str(p) for p in err["loc"])
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


class KindDefaults:
    """Hook defaults most kinds share: create any role at once, clean up every
    type, store the engine's status as it is, no ssh."""

    uses_ssh = False

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
