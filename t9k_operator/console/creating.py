"""The console's New job page: a job from YAML, or from ``t9k create``'s fields.

==========================  ==========================================================
``GET /new``                the page (HTML; its script and style are files)
``POST /api/new/preview``   the job as the API server would store it (a server-side
                            apply with ``dryRun=All``): 200 ``{"yaml", "manifest",
                            "key"}``, or the refusal
``POST /api/new/create``    the same apply, for real: 201 with the same body and
                            ``url``, the new job's page; or the refusal
==========================  ==========================================================

Both take JSON: ``{"yaml": text}`` (one document: a job of a kind the
console shows, or an MSJob) or ``{"form": {...}}``, the fields of ``t9k
create`` (kind, name, image, command, workers, GPUs, queue, priority,
TensorBoard, labels, annotations), made into a manifest by the builder ``t9k
create`` uses (:func:`~t9k_operator.sdk.build.build_job`). Either goes
through ``Client.submit``: server-side apply with strict field validation,
so an unknown or misspelt field is refused with its path (``"fields"``)
and nothing is stored. Create refuses a name that is taken (409): it makes a
job, it never changes one. Refusals are :func:`~.actions.refusal`'s.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from t9k_operator.kinds.registry import KINDS
from t9k_operator.sdk import JobRequest, build_job
from t9k_operator.sdk.errors import BadJob
from t9k_operator.sdk.manifests import kind_of

MAX_BODY = 256 * 1024
"""The largest request body the page may send (a job's YAML is a few KiB)."""
ALWAYS = ("MSJob",)
"""Kinds accepted even when the console does not watch them."""
Obj = dict[str, Any]


def accepted(kinds: Sequence[str]) -> list[str]:
    """The ``t9k create`` names of the job kinds the page makes: those the
    console shows, and MSJob."""
    return [k.cli_name for k in KINDS if k.crd.kind in kinds or k.crd.kind in ALWAYS]


def one_manifest(text: str, kinds: Sequence[str]) -> Obj:
    """The one job in ``text``; :class:`BadJob` when it is not YAML, is several
    documents, or is not a job of an accepted kind."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise BadJob(f"not YAML: {exc}") from None
    if len(docs) != 1:
        raise BadJob(
            f"one job at a time: this YAML has {len(docs)} documents"
            if docs
            else "no job: the YAML is empty"
        )
    doc = docs[0]
    if not isinstance(doc, Mapping) or doc.get("kind") == "List":
        raise BadJob("a job is one mapping (apiVersion, kind, metadata, spec), not a list")
    kind = kind_of(doc)
    if kind.cli_name not in accepted(kinds):
        raise BadJob(f"the console makes no {kind.crd.kind}: {', '.join(accepted(kinds))}")
    if not isinstance(doc.get("metadata"), Mapping) or not doc["metadata"].get("name"):
        raise BadJob(f"a {kind.crd.kind} needs metadata.name")
    return dict(doc)


def _pairs(text: str, what: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (or commas) as a mapping."""
    out = {}
    for item in re.split(r"[\n,]", text):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        if not sep or not key:
            raise BadJob(f"{what} wants KEY=VALUE, not {item.strip()!r}")
        out[key] = value
    return out


def _number(form: Mapping[str, Any], field: str, default: int | None) -> int | None:
    value = str(form.get(field) or "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise BadJob(f"{field} must be a whole number, not {value!r}") from None


def form_manifest(form: Mapping[str, Any], kinds: Sequence[str]) -> Obj:
    """The job ``t9k create`` builds from the form's fields (:func:`build_job`)."""

    def text(field: str) -> str:
        return str(form.get(field) or "").strip()

    if text("kind") not in accepted(kinds):
        raise BadJob(f"choose a kind: {', '.join(accepted(kinds))}")
    try:
        command = shlex.split(text("command"))
    except ValueError as exc:
        raise BadJob(f"the command does not split into words: {exc}") from None
    extra: dict[str, Any] = {}
    if text("tensorboard_image"):
        extra["tensorboard_image"] = text("tensorboard_image")
    request = JobRequest(
        kind=text("kind"),
        name=text("name"),
        image=text("image"),
        command=command,
        workers=_number(form, "workers", 1) or 0,
        gpus=_number(form, "gpus", 0) or 0,
        namespace=text("namespace") or None,
        torchrun=form.get("torchrun") is True,
        queue=text("queue") or None,
        priority=_number(form, "priority", None),
        tensorboard=text("tensorboard") or None,
        labels=_pairs(text("labels"), "a label"),
        annotations=_pairs(text("annotations"), "an annotation"),
        **extra,
    )
    if not request.name or not request.image:
        raise BadJob("a job needs a name and an image")
    return build_job(request)
