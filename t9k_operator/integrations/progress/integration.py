"""Training progress: the replicas' reports in the job's status, and what the
engine's hang rule judges.

A training process reports its progress (``t9k_operator/report.py``) to the
operator's endpoint (``integrations/progress/endpoint.py``, started by this
integration's server hook in ``integrations/progress/served.py``), which checks
who sent it and keeps it in a store. The endpoint provides what it took, with
where it serves and its CA, as a :class:`ProgressSource`, which this
integration reads at observe time through ``Caches.source("progress")`` as
other integrations read the informers' caches (None: no endpoint serves, and
the replicas are told of none). Per job, in a reconcile, this integration

- observes the latest report of each of the job's pods (:class:`Received`),
  kept in its state, and tells the engine when each pod was last heard from
  under the job's hang policy (``heartbeats``, from the
  :class:`~t9k_operator.kinds.asks.HangPolicy` the job asks): the engine's
  hang rule judges them, restarting or failing the job as the job asks; the
  integration itself holds nothing back; and, for a job that asks to
  checkpoint before a stop, the newest checkpoint each pod reported
  (``checkpoints``);
- keeps the job's CA ConfigMap (``prepare``) and gives every new pod the
  reporter's environment, projected token and CA (``decorate``; what they
  are: ``progress_pods``);
- renders ``status.progress`` (``progress_status.render``): the newest
  report's step, total, epoch and metrics, the replica it came from and when,
  the throughput over that replica's recent reports and the time left.

Everything here is pure: times are given, never read.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Protocol, cast
from urllib.parse import urlsplit

from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.progress.build import PROGRESS_PART
from t9k_operator.integrations.progress.pods import (
    Settings,
    add_reporting,
    ca_map,
    ca_map_name,
    job_path,
)
from t9k_operator.integrations.progress.status import Received, render
from t9k_operator.kinds.asks import CheckpointOnStop, HangPolicy
from t9k_operator.kinds.view import Checkpointed, Heartbeat, JobView
from t9k_operator.objects import Obj, controller_ref, owner_reference
from t9k_operator.reconcilers.engine import TERMINAL
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    Event,
    JobInput,
    Rule,
    Watch,
)
from t9k_operator.resources import CONFIGMAPS, TOKENREVIEWS

WHAT = "the job's progress CA ConfigMap"
CERT_SECRET = "t9k-operator-progress-tls"
"""The Secret the operator keeps the endpoint's certificate in, by default."""


def heartbeats(
    policy: HangPolicy | None, heard: Iterable[tuple[str, datetime]]
) -> tuple[Heartbeat, ...]:
    """When each pod (by uid) was last heard from, as the engine's hang rule
    judges it under the job's ``policy`` (None: never hung, nothing to judge)."""
    if policy is None:
        return ()
    restart = policy.on_hang == "Restart"
    return tuple(Heartbeat(uid, at, policy.timeout_seconds, restart) for uid, at in heard)


class ProgressSource(Protocol):
    """What the serving endpoint provides this integration (``Caches.source``)."""

    @property
    def settings(self) -> Settings:
        """Where it serves, and the audience of the replicas' tokens."""
        ...

    @property
    def ca(self) -> str:
        """The CA its certificate chains to (PEM; "" not known yet)."""
        ...

    def latest(self, job_uid: str) -> Sequence[Received]:
        """The latest report of each pod of the job (by the job's uid), any order."""
        ...


@dataclass(frozen=True)
class EndpointOptions:
    """The endpoint's flags, as given (the manager's wiring serves them)."""

    bind_address: str
    service: str
    namespace: str | None
    service_port: int
    url: str | None
    audience: str
    cert_dir: str | None
    cert_secret: str
    qps: float
    burst: int

    def base_url(self, namespace: str) -> str:
        """Where the replicas report: ``--progress-url``, else the Service."""
        if self.url:
            return self.url.rstrip("/")
        host = f"{self.service}.{namespace}.svc"
        return (
            f"https://{host}" if self.service_port == 443 else f"https://{host}:{self.service_port}"
        )

    def hosts(self, namespace: str) -> list[str]:
        """The names the serving certificate must carry."""
        svc = self.service
        names = [f"{svc}.{namespace}.svc", f"{svc}.{namespace}.svc.cluster.local"]
        names += [f"{svc}.{namespace}", svc]
        host = urlsplit(self.url).hostname if self.url else None
        if host:
            names.insert(0, host)
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class ProgressState:
    received: tuple[Received, ...] = ()
    settings: Settings | None = None  # None: no endpoint serves; the replicas are told of none
    path: str = ""  # the job's path on the endpoint
    ca: str = ""  # the CA the endpoint's certificate chains to (PEM; "" not known yet)
    ca_map: Obj | None = None  # the job's CA ConfigMap, as cached
    owner: Obj | None = None  # the job's ownerReference, for the ConfigMap
    finished: bool = False


class JobProgress(Base[ProgressState]):
    """The progress integration: the replicas learn where and how to report,
    and the job's status shows what they reported."""

    name = "progress"
    serves: ClassVar[tuple[type, ...]] = (HangPolicy,)
    parts: ClassVar[tuple[StatusPart, ...]] = (PROGRESS_PART,)

    def __init__(self, options: EndpointOptions | None = None) -> None:
        self.options = options  # the endpoint's flags, for its server

    # -- flags ----------------------------------------------------------------------

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("progress reports (docs/progress.md)")
        g.add_argument(
            "--progress-bind-address",
            default=":8443",
            help="where the HTTPS endpoint that takes the replicas' progress reports "
            "listens ([host]:port); 0 turns progress reporting off",
        )
        g.add_argument(
            "--progress-service",
            default="t9k-operator-progress",
            help="the Service in front of the endpoint, in the operator's namespace",
        )
        g.add_argument(
            "--progress-service-namespace",
            default=None,
            help="the namespace of that Service and of the certificate's Secret "
            "(default: the operator's own)",
        )
        g.add_argument("--progress-service-port", type=int, default=443, help="the Service's port")
        g.add_argument(
            "--progress-url",
            default=None,
            help="the https:// address the replicas report to, instead of the Service's "
            "(e.g. an operator run outside the cluster); its host is added to the certificate",
        )
        g.add_argument(
            "--progress-audience",
            default="t9k-operator-progress",
            help="the audience of the replicas' projected ServiceAccount tokens",
        )
        g.add_argument(
            "--progress-cert-dir",
            default=None,
            help="a directory with tls.crt, tls.key and ca.crt (e.g. a cert-manager "
            "Secret mounted there), read again when they change; without it the "
            "operator keeps a certificate of its own in --progress-cert-secret",
        )
        g.add_argument(
            "--progress-cert-secret",
            default=CERT_SECRET,
            help="the Secret, in the Service's namespace, the operator keeps its CA and "
            "serving certificate in",
        )
        g.add_argument(
            "--progress-report-qps",
            type=float,
            default=10.0,
            help="reports a job's replicas may send per second together (more are "
            "refused with 429; the reporter sends the latest next)",
        )
        g.add_argument(
            "--progress-report-burst",
            type=int,
            default=50,
            help="reports a job's replicas may send at once",
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        if args.progress_url is not None and not str(args.progress_url).startswith("https://"):
            return "--progress-url must be an https:// address"
        if not 0 < args.progress_service_port < 65536:
            return "--progress-service-port must be a port (1-65535)"
        if args.progress_report_qps <= 0 or args.progress_report_burst < 1:
            return "--progress-report-qps must be > 0 and --progress-report-burst >= 1"
        if not args.progress_audience:
            return "--progress-audience must not be empty"
        return None

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> JobProgress | None:
        """Off with ``--progress-bind-address 0``. The endpoint is the server
        hook's to start (``integrations/progress/served.py``)."""
        if args.progress_bind_address in ("0", ""):
            return None
        options = EndpointOptions(
            bind_address=args.progress_bind_address,
            service=args.progress_service,
            namespace=args.progress_service_namespace,
            service_port=args.progress_service_port,
            url=args.progress_url,
            audience=args.progress_audience,
            cert_dir=args.progress_cert_dir,
            cert_secret=args.progress_cert_secret,
            qps=args.progress_report_qps,
            burst=args.progress_report_burst,
        )
        return cls(options)

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return (
            Rule(
                (TOKENREVIEWS.group,),
                (TOKENREVIEWS.plural,),
                ("create",),
                why="The progress endpoint checks each report's token (a projected ServiceAccount\n"
                "token bound to the endpoint's audience) with a TokenReview. Left out of a\n"
                "namespaced install's Role (cluster-scoped: docs/progress.md says what to grant).",
            ),
            Rule(
                ("",),
                ("secrets",),
                ("create",),
                why="The progress endpoint's certificate: the operator keeps its CA and serving\n"
                "certificate in this Secret of its own namespace, creating it on first start\n"
                "and renewing it before it expires (docs/security.md).",
                own_namespace=True,
            ),
            Rule(
                ("",),
                ("secrets",),
                ("get", "update"),
                resource_names=(CERT_SECRET,),
                own_namespace=True,
            ),
        )

    # -- hooks ----------------------------------------------------------------------

    def watches(self) -> tuple[Watch, ...]:
        return (Watch(CONFIGMAPS, owned=True),)

    def observe(self, job: JobInput, caches: Caches) -> tuple[ProgressState, JobView] | None:
        # What the endpoint provides under this integration's name (see the module).
        source = cast("ProgressSource | None", caches.source(self.name))
        received = tuple(source.latest(job.view.uid)) if source is not None else ()
        view = job.view
        finished = view.status.get("phase") in TERMINAL
        if source is None:  # no endpoint serves: nothing to tell the replicas
            return ProgressState(received, finished=finished), view
        crd = job.kind.crd
        state = ProgressState(
            received,
            settings=source.settings,
            path=job_path(view.namespace, crd.plural, view.name),
            ca=source.ca,
            ca_map=caches.get(CONFIGMAPS, view.namespace, ca_map_name(view.name)),
            owner=owner_reference(crd.api_version, crd.kind, view.name, view.uid),
            finished=finished,
        )
        return state, view

    def heartbeats(self, state: ProgressState, view: JobView) -> tuple[Heartbeat, ...]:
        return heartbeats(view.ask(HangPolicy), ((r.uid, r.last_heard) for r in state.received))

    def checkpoints(self, state: ProgressState, view: JobView) -> tuple[Checkpointed, ...]:
        """The newest checkpoint each pod reported, for a job that asks to
        checkpoint before a stop (a job that does not ignores them)."""
        if view.ask(CheckpointOnStop) is None:
            return ()
        return tuple(
            Checkpointed(r.uid, r.pod, r.checkpoint.step, r.checkpoint.at)
            for r in state.received
            if r.checkpoint is not None
        )

    def prepare(self, state: ProgressState, view: JobView) -> list[Action]:
        """The job's CA ConfigMap, kept equal to the endpoint's CA while the job
        runs (a name held by another object is left alone: the volume's source
        is optional, so its pods start; their reports fail TLS and are dropped)."""
        if state.settings is None or not state.ca or state.finished or state.owner is None:
            return []
        want = ca_map(view, state.ca, state.owner)
        seen = state.ca_map
        if seen is None:
            return [Action("create", CONFIGMAPS, want, WHAT, soft=True)]
        if (controller_ref(seen) or {}).get("uid") != view.uid:
            return []
        if seen.get("data") != want["data"]:
            updated = copy.deepcopy(seen)
            updated["data"] = want["data"]
            return [Action("replace", CONFIGMAPS, updated, WHAT, soft=True)]
        return []

    def decorate(self, state: ProgressState, view: JobView, pod: Obj) -> None:
        if state.settings is not None:
            add_reporting(pod, state.settings, state.path, ca_map_name(view.name))

    def status(self, state: ProgressState, view: JobView, status: Obj) -> list[Event]:
        # A job that had finished keeps what was last written; the pass that ends
        # it still writes the reports received until then.
        progress = None if state.finished else render(state.received)
        if progress is not None:
            status["progress"] = progress
        elif view.status.get("progress"):
            status["progress"] = dict(view.status["progress"])  # kept as last written
        return []
