"""What the t9k command and the SDK read of a kind, stated once beside the
operator's hooks: its command-line name, its REST resource, whether it
pauses, whose outcome decides a job, the GPUs its pods ask for, and how
``t9k create`` writes a spec of it.

:class:`CommandHooks` is that part of :class:`~t9k_operator.kinds.contract.JobKind`;
:class:`CommandDefaults` the defaults
:class:`~t9k_operator.kinds.contract.KindBase` gives it. The TensorBoard, a
kind the operator serves that is not a job, is an :class:`OtherKind`; both
are :class:`Served`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from t9k_operator.api.crd import CrdInfo, JobObject
from t9k_operator.builders.common import NORMAL, PodMode
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.gpus import pod_gpus
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj
from t9k_operator.resources import Resource

J = TypeVar("J", bound=JobObject[Any, Any])
JobT_contra = TypeVar("JobT_contra", bound=JobObject[Any, Any], contravariant=True)


def resource_of(crd: CrdInfo) -> Resource:
    """The REST resource of a kind, from the identity its CRD declares."""
    return Resource(crd.group, crd.version, crd.plural, crd.kind, crd.namespaced)


class CommandHooks(Protocol[JobT_contra]):
    """What the t9k command and the SDK need of a job kind."""

    cli_name: str
    """Its name on the t9k command line (``t9k create pytorch``)."""
    pausable: bool
    """Whether its API has ``spec.runMode.pause`` (``t9k pause``)."""

    @property
    def resource(self) -> Resource:
        """Its REST resource, from its CRD."""
        ...

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        """The replica (type, index) whose outcome decides the job's (the master,
        worker-0, the launcher): what ``outcome`` reads, and whose log ``t9k logs``
        shows by default."""
        ...

    def gpus(self, job: JobT_contra) -> int:
        """GPUs the job's pods ask for: over the view's roles (as the operator
        creates them, elastic clamping included), the replicas times the GPUs of
        the role's pod as the builders build it."""
        ...

    def from_flags(self, request: JobRequest) -> Obj:
        """The spec ``t9k create`` writes for ``request`` (:mod:`~t9k_operator.kinds.flags`);
        :class:`~t9k_operator.kinds.flags.FlagsRefused` when the kind cannot make it."""
        ...


class CommandDefaults(Generic[J]):
    """The defaults of :class:`CommandHooks`: the resource from the CRD, not
    pausable, and the GPUs of the pods the kind's own builders build."""

    crd: CrdInfo
    cli_name: str
    pausable: bool = False

    @property
    def resource(self) -> Resource:
        return resource_of(self.crd)

    def view(self, job: J) -> JobView:
        raise NotImplementedError  # every kind has its own

    def build_pod(
        self, job: J, type_: str, index: int, mode: PodMode, svc: Mapping[str, Obj]
    ) -> Obj:
        raise NotImplementedError  # every kind has its own

    def role_pod(self, job: J, type_: str) -> Obj:
        """The first pod of a role as the builders build it, for what every pod
        of the role shares (its resources); a kind whose pods need a Service's
        value builds it without."""
        return self.build_pod(job, type_, 0, NORMAL, {})

    def gpus(self, job: J) -> int:
        # A manifest not stored yet (t9k create) has no namespace or uid, which
        # the view reads; no pod's resources depend on them.
        meta = {"namespace": "", "uid": "", **job.metadata}
        job = job.model_copy(update={"metadata": meta})
        roles = self.view(job).roles
        return sum(r.replicas * pod_gpus(self.role_pod(job, r.type)) for r in roles if r.replicas)


@dataclass(frozen=True)
class OtherKind:
    """A kind the operator serves that is not a job (the TensorBoard): what the
    t9k command and the SDK need of it, named as a job kind names it."""

    cli_name: str
    crd: CrdInfo
    model: type[JobObject[Any, Any]]
    pausable: bool = False

    @property
    def resource(self) -> Resource:
        return resource_of(self.crd)


class Served(Protocol):
    """What the t9k command and the SDK read of any kind the operator serves."""

    @property
    def cli_name(self) -> str: ...
    @property
    def crd(self) -> CrdInfo: ...
    @property
    def model(self) -> type[JobObject[Any, Any]]: ...
    @property
    def pausable(self) -> bool: ...
    @property
    def resource(self) -> Resource: ...
