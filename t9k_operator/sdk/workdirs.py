"""A job with its workdir, created as one: what ``t9k create/submit --workdir``
and :meth:`Client.create` / :meth:`Client.submit` (``workdir=``) do.

The workdir is an integration's (``t9k_operator/integrations/workdir/``),
which offers the clients its part (:class:`WorkdirPart`: the packing, the
annotation and the ConfigMap) through :mod:`t9k_operator.client_parts`; a
``t9k`` without that folder says so (:class:`Unsupported`) when a workdir is
asked for. The directory is packed and its size checked first, before
anything is created; the job gets the annotation naming its ConfigMap; then
the job is written (:func:`write`), then the ConfigMap, owned by it. When the
ConfigMap cannot be created, a job this call created is deleted again, so no
job is left without its workdir; the API server's word is raised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from t9k_operator import client_parts, kube
from t9k_operator.resources import CONFIGMAPS, Resource
from t9k_operator.sdk.errors import BadJob, Unsupported, from_api

Obj = dict[str, Any]


class Packed(Protocol):
    """A packed directory: the archive (gzip'd tar) and where it came from."""

    @property
    def root(self) -> str: ...

    @property
    def archive(self) -> bytes: ...


class WorkdirPart(Protocol):
    """What the clients need of the workdir integration."""

    annotation: str
    """The job's annotation naming its workdir ConfigMap."""
    mount_path: str
    """Where every replica finds the workdir, and runs."""
    limit: int
    """The largest archive, in bytes."""
    error: type[ValueError]
    """What packing, checking and unpacking raise, with a message for the user."""

    def pack(
        self, directory: str | os.PathLike[str] | None, extra: Mapping[str, bytes] | None = None
    ) -> Packed: ...

    def check_size(self, packed: Packed, limit: int = ...) -> None: ...

    def unpack(self, packed: Packed, into: str | os.PathLike[str]) -> None: ...

    def config_map_name(self, job_name: str) -> str: ...

    def config_map(self, job: Obj, archive: bytes) -> Obj: ...


def part() -> WorkdirPart:
    """The workdir integration's part; :class:`Unsupported` when its folder is not
    installed."""
    found = client_parts.part("workdir")
    if found is None:
        raise Unsupported(
            "this t9k has no workdir support: its integration (t9k_operator/integrations/"
            "workdir) is not installed"
        )
    return cast(WorkdirPart, found)


def packed(directory: str | os.PathLike[str] | Packed) -> Packed:
    """``directory`` packed (or as packed already) and checked against the
    limit; :class:`BadJob` with the packer's message when it cannot be."""
    workdir = part()
    try:
        archive = workdir.pack(directory) if isinstance(directory, str | os.PathLike) else directory
        workdir.check_size(archive)
    except workdir.error as exc:
        raise BadJob(str(exc)) from None
    return archive


def annotated(manifest: Mapping[str, Any]) -> Obj:
    """``manifest`` with the annotation naming its workdir ConfigMap (kept if it
    names one already)."""
    meta = dict(manifest.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    workdir = part()
    annotations.setdefault(workdir.annotation, workdir.config_map_name(str(meta.get("name"))))
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
    owned = part().config_map(job, archive.archive)
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
            f"name another in the annotation {part().annotation}, or delete it"
        )
    existing["binaryData"] = body["binaryData"]
    existing.pop("data", None)
    client.replace(CONFIGMAPS, existing)
