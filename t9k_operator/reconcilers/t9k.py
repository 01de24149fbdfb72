"""Fields every T9k job kind shares (``runPolicy``, ``runMode``), read into the
engine's terms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import ValidationError

from t9k_operator.reconcilers.engine import Override


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
        return f"invalid spec: {path}: {err['msg']}"
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
