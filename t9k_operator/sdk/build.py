"""A job from a few flags (``t9k create``): pure, checked by the kind's own model.

:func:`build_job` asks the kind (``kinds/``, its ``from_flags``) for the spec a
user would write for the simplest job of that kind (N workers of one image, G
GPUs each, a command), then parses the manifest with the kind's pydantic model
(``api/``), so a job the model refuses is refused here with the model's
message, before the API server sees it.
"""

from __future__ import annotations

from typing import Any

import pydantic

from t9k_operator.kinds import registry
from t9k_operator.kinds.command import Served
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.flags import (
    DEFAULT_TENSORBOARD_IMAGE,
    FlagsRefused,
    JobRequest,
    NotForThisKind,
)
from t9k_operator.sdk.errors import BadJob, Unsupported
from t9k_operator.sdk.manifests import either

__all__ = ["DEFAULT_TENSORBOARD_IMAGE", "JobRequest", "build_job", "check"]


def _job_kind(name: str) -> JobKind[Any]:
    try:
        kind = registry.by_name(name)
    except KeyError:
        raise BadJob(
            f"unknown kind {name!r}: {either(k.cli_name for k in registry.KINDS)}"
        ) from None
    for job_kind in registry.KINDS:
        if job_kind is kind:
            return job_kind
    raise Unsupported(f"t9k create makes jobs, not a {kind.crd.kind}")


def build_job(request: JobRequest) -> dict[str, Any]:
    """The job's manifest, checked by its kind's model; :class:`BadJob` with the
    model's message when it does not fit."""
    kind = _job_kind(request.kind)
    if request.workers < 1:
        raise BadJob("--workers must be at least 1")
    if request.gpus < 0:
        raise BadJob("--gpus must not be negative")
    metadata: dict[str, Any] = {"name": request.name}
    if request.namespace:
        metadata["namespace"] = request.namespace
    if request.labels:
        metadata["labels"] = dict(request.labels)
    try:
        spec = kind.from_flags(request)
    except NotForThisKind as exc:
        raise Unsupported(str(exc)) from None
    except FlagsRefused as exc:
        raise BadJob(str(exc)) from None
    manifest = {
        "apiVersion": kind.crd.api_version,
        "kind": kind.crd.kind,
        "metadata": metadata,
        "spec": spec,
    }
    check(kind, manifest)
    return manifest


def check(kind: Served, manifest: dict[str, Any]) -> None:
    """:class:`BadJob` with the model's messages when ``manifest`` does not fit its kind."""
    try:
        kind.model.from_dict(manifest)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'job'}: {e['msg']}" for e in exc.errors()
        )
        raise BadJob(
            f"invalid {kind.crd.kind} {manifest['metadata'].get('name')}: {problems}"
        ) from None
