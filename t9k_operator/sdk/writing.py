"""The SDK client's writes: submit, create, train, pause, resume, delete.

:class:`~t9k_operator.sdk.client.Client` is these and its reads; a write
raises :mod:`t9k_operator.sdk.errors` types carrying the API server's message.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from t9k_operator import kube
from t9k_operator.api.crd import JobObject
from t9k_operator.kinds.command import Served
from t9k_operator.kinds.registry import TENSORBOARD, of_object
from t9k_operator.sdk import training, workdirs
from t9k_operator.sdk.build import check
from t9k_operator.sdk.errors import BadJob, Unsupported, call
from t9k_operator.sdk.manifests import kind_of, manifests
from t9k_operator.sdk.workdirs import Packed

FIELD_MANAGER = "t9k"

Obj = dict[str, Any]


def _placed(manifest: Mapping[str, Any], default: str) -> tuple[Obj, str]:
    """The manifest with its namespace (``default`` when it names none), and that namespace."""
    meta = dict(manifest.get("metadata") or {})
    meta["namespace"] = namespace = str(meta.get("namespace") or default)
    return {**manifest, "metadata": meta}, namespace


class Writing(ABC):
    """The writes of a client of ``kube`` whose default namespace is ``namespace``;
    the client's reads give :meth:`get`."""

    kube: kube.KubeClient
    namespace: str

    @abstractmethod
    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    def submit(
        self,
        source: str | Mapping[str, Any] | Sequence[Mapping[str, Any]] | JobObject[Any, Any],
        *,
        workdir: str | os.PathLike[str] | Packed | None = None,
        dry_run: bool = False,
    ) -> list[Obj]:
        """Server-side apply each job (or TensorBoard) in ``source`` (YAML or JSON
        text, one manifest or a list, or a model), with strict field validation:
        an unknown field is refused, with the API server's message. ``workdir``:
        a directory every job's replicas find unpacked at their working directory
        (docs/workdir.md), packed and checked before anything is written.
        ``dry_run``: the API server checks and answers each as it would be
        stored, and stores nothing (no ``workdir`` then)."""
        if dry_run and workdir is not None:
            raise BadJob("a dry run writes no workdir: leave it out")
        archive = workdirs.packed(workdir) if workdir is not None else None
        applied: list[Obj] = []
        for manifest in manifests(source):
            kind = kind_of(manifest)
            if not (manifest.get("metadata") or {}).get("name"):
                raise BadJob(f"a {kind.crd.kind} without metadata.name")
            body, namespace = _placed(manifest, self.namespace)
            packed = None if kind is TENSORBOARD else archive
            write = lambda b, k=kind, ns=namespace: self._apply(k, b, ns, dry_run)  # noqa: E731
            applied.append(workdirs.write(self.kube, kind.resource, body, write, packed))
        return applied

    def _apply(self, kind: Served, body: Obj, namespace: str, dry_run: bool = False) -> Obj:
        return call(
            lambda: self.kube.patch(
                kind.resource,
                str(body["metadata"]["name"]),
                body,
                namespace,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                field_validation="Strict",
                dry_run=dry_run,
            )
        )

    def create(
        self,
        job: JobObject[Any, Any] | Mapping[str, Any],
        *,
        workdir: str | os.PathLike[str] | Packed | None = None,
    ) -> Obj:
        """Create a job (a model from ``t9k_operator.api``, or a manifest); an
        existing one of the name is :class:`AlreadyExists`. ``workdir``: a
        directory its replicas find unpacked at their working directory
        (docs/workdir.md), packed and checked before the job is created."""
        manifest = job.to_dict() if isinstance(job, JobObject) else dict(job)
        check(kind_of(manifest), manifest)
        return self._create(manifest, workdirs.packed(workdir) if workdir is not None else None)

    def _create(self, manifest: Mapping[str, Any], archive: Packed | None) -> Obj:
        kind = kind_of(manifest)
        body, namespace = _placed(manifest, self.namespace)
        body.pop("status", None)

        def write(body: Obj) -> Obj:
            return call(
                lambda: self.kube.create(kind.resource, body, namespace, field_validation="Strict")
            )

        return workdirs.write(self.kube, kind.resource, body, write, archive, created=True)

    def train(self, func: Callable[..., Any], *, name: str, image: str, **options: Any) -> Obj:
        """Run ``func`` (defined with def, its imports inside it) as a job ``name`` of
        ``image``: ``kind`` (default pytorch), ``workers``, ``gpus``, ``kwargs``
        (JSON) it is called with, ``packages`` pip installs first, ``workdir``
        beside it, ``python``; :func:`training.run_locally` runs it on this machine."""
        return self._create(*training.prepare(training.Training(func, name, image, **options)))

    def pause(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        """Pause a T9k job (``spec.runMode.pause.enabled``): its pods are deleted,
        its TensorBoard kept, until :meth:`resume`."""
        return self._set_pause(name, kind, namespace, True)

    def resume(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        return self._set_pause(name, kind, namespace, False)

    def _set_pause(self, name: str, kind: str | None, namespace: str | None, on: bool) -> Obj:
        job = self.get(name, kind, namespace)
        k = of_object(job)
        if not k.pausable:
            raise Unsupported(
                f"a {k.crd.kind} cannot be {'paused' if on else 'resumed'}: its API has no run mode"
            )
        patch = {"spec": {"runMode": {"pause": {"enabled": on}}}}
        ns = job["metadata"]["namespace"]
        return call(lambda: self.kube.patch(k.resource, name, patch, ns))

    def delete(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        """Delete a job; its pods, Services, ConfigMaps and TensorBoard go with it."""
        job = self.get(name, kind, namespace)
        k = of_object(job)
        ns = job["metadata"]["namespace"]
        uid = job["metadata"].get("uid")
        return call(lambda: self.kube.delete(k.resource, name, ns, uid=uid))
