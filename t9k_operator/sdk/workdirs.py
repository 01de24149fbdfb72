"""A job with its workdir, created as one: what ``t9k create/submit --workdir``
and :meth:`Client.create` / :meth:`Client.submit` (``workdir=``) do.

The directory is packed and its size checked first (``t9k_operator/integrations/workdir/pack.py``),
before anything is created; the job gets the annotation naming its ConfigMap
(``integrations/workdir/build.py``); then the job is written (:func:`write`), then the
ConfigMap, owned by it. When the ConfigMap cannot be created, a job this call created is
deleted again, so no job is left without its workdir; the API server's word
is raised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from t9k_operator import kube
from t9k_operator.integrations.workdir import build
from t9k_operator.integrations.workdir.pack import Packed, WorkdirError, check_size, pack
from t9k_operator.resources import CONFIGMAPS, Resource
from t9k_operator.sdk.errors import BadJob, from_api

Obj = dict[str, Any]


def packed(directory: str | os.PathLike[str] | Packed) -> Packed:
    """``directory`` packed (or as packed already) and checked against the
    limit; :class:`BadJob` with the packer's message when it cannot be."""
    try:
        archive = directory if isinstance(directory, Packed) else pack(directory)
        check_size(archive)
    except WorkdirError as exc:
        raise BadJob(str(exc)) from None
    return archive


def annotated(manifest: Mapping[str, Any]) -> Obj:
    """``manifest`` with the annotation naming its workdir ConfigMap (kept if it
    names one already)."""
    meta = dict(manifest.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations.setdefault(build.ANNOTATION, build.config_map_name(str(meta.get("name"))))
    meta["annotations"] = annotations
    return {**manifest, "metadata": meta}


def write(
    client: kube.KubeClient,
    resource: Resource,
    body: Obj,
    write: Callable[[Obj], Obj],
    archive: Packed | None,
    *,
    created: bool | None = None,
) -> Obj:
    """Write the job ``body`` of ``resource`` (``write`` returns it as stored)
    and, with ``archive``, first annotated, then its workdir ConfigMap. A job
    this call created (``created``; None: it is created unless it exists now)
    is deleted again when the ConfigMap cannot be had."""
    if archive is None:
        return write(body)
    body = annotated(body)
    meta = body["metadata"]
    if created is None:
        try:
            client.get(resource, meta["name"], meta["namespace"])
            created = False
        except kube.NotFound:
            created = True
        except kube.ApiError as exc:
            raise from_api(exc) from None
    job = write(body)
    owned = build.config_map(job, archive.archive)
    meta = job["metadata"]
    try:
        try:
            client.create(CONFIGMAPS, owned, meta["namespace"])
        except kube.AlreadyExists:
            _replace(client, owned, meta["uid"])
    except (kube.ApiError, BadJob) as exc:
        if created:
            with contextlib.suppress(kube.NotFound):
                client.delete(resource, meta["name"], meta["namespace"], uid=meta["uid"])
        raise (from_api(exc) if isinstance(exc, kube.ApiError) else exc) from None
    return job


def _replace(client: kube.KubeClient, body: Obj, uid: str) -> None:
    """The job's own ConfigMap of that name gets the new archive; another's is refused."""
    meta = body["metadata"]
    existing = client.get(CONFIGMAPS, meta["name"], meta["namespace"])
    owners = existing["metadata"].get("ownerReferences") or []
    if not any(o.get("uid") == uid for o in owners):
        raise BadJob(
            f"ConfigMap {meta['name']} already exists and is not this job's workdir; "
            f"name another in the annotation {build.ANNOTATION}, or delete it"
        )
    existing["binaryData"] = body["binaryData"]
    existing.pop("data", None)
    client.replace(CONFIGMAPS, existing)
