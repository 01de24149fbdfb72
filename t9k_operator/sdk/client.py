"""The SDK's client: jobs of every kind, over the operator's own REST client.

::

    from t9k_operator.sdk import Client

    client = Client(namespace="team-a")          # kubeconfig, as kubectl finds it
    client.submit(open("job.yaml").read())       # server-side apply, strict fields
    job = client.wait("mnist", "Succeeded", timeout=600)
    for line in client.logs("mnist", all_replicas=True):
        print(line.replica, line.text)

Every method raises :mod:`t9k_operator.sdk.errors` types carrying the API
server's message. Jobs are plain dicts as the API server returns them;
:meth:`Client.parse` turns one into its kind's pydantic model.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import yaml

from t9k_operator import kube
from t9k_operator.api.crd import JobObject
from t9k_operator.builders.common import CHILD_SELECTOR, JOB_KIND, JOB_NAME
from t9k_operator.kinds.command import Served
from t9k_operator.kinds.registry import KINDS, TENSORBOARD, job_kind_of, of_object
from t9k_operator.objects import parse_time
from t9k_operator.resources import EVENTS, NODES, PODS, WORKLOADS
from t9k_operator.sdk import views
from t9k_operator.sdk.errors import BadJob, NotFound, call, from_api
from t9k_operator.sdk.forward import Forwarder, to_tensorboard
from t9k_operator.sdk.logs import LogLine, LogReads
from t9k_operator.sdk.manifests import named_kind
from t9k_operator.sdk.waiting import WAIT_STATES, wait_for
from t9k_operator.sdk.writing import Obj, Writing

__all__ = ["WAIT_STATES", "Client", "LogLine", "context_namespace"]

SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
T = TypeVar("T")


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace the kubeconfig's context names (as kubectl reads it); in a
    pod without a kubeconfig, the pod's; else ``default``."""
    paths = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    if not kubeconfig and not os.environ.get("KUBECONFIG") and not os.path.exists(paths):
        try:
            with open(SERVICE_ACCOUNT_NAMESPACE) as f:
                return f.read().strip() or "default"
        except OSError:
            return "default"
    docs = []
    for path in paths.split(os.pathsep):
        try:
            with open(os.path.expanduser(path)) as f:
                docs.append(yaml.safe_load(f) or {})
        except (OSError, yaml.YAMLError):
            continue
    current = context or next(
        (d.get("current-context") for d in docs if d.get("current-context")), None
    )
    for doc in docs:
        for entry in doc.get("contexts") or []:
            if entry.get("name") == current:
                return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def _each(kinds: Iterable[Served], read: Callable[[Served], T]) -> list[tuple[Served, T]]:
    """What ``read`` gives of each kind, leaving out those the cluster does not serve."""
    out = []
    for k in kinds:
        try:
            out.append((k, read(k)))
        except kube.NotFound:
            continue
        except kube.ApiError as exc:
            raise from_api(exc) from None
    return out


class Client(Writing, LogReads):
    """Jobs and TensorBoards of one cluster (and a default namespace): the reads
    here, the writes of :class:`Writing`, the logs of :class:`LogReads`."""

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
        *,
        kube_client: kube.KubeClient | None = None,
    ) -> None:
        if kube_client is None:
            options = kube.ClientOptions(qps=50, burst=100, user_agent="t9k")
            kube_client = call(lambda: kube.KubeClient.from_config(kubeconfig, context, options))
        self.kube = kube_client
        self.namespace = namespace or context_namespace(kubeconfig, context)

    def close(self) -> None:
        self.kube.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------

    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        """A job by name: of ``kind`` if given, else of whichever job kind has
        one of that name (:class:`BadJob` when several have)."""
        ns = namespace or self.namespace
        kinds: builtins.list[Served] = [named_kind(kind)] if kind else list(KINDS)
        found = [job for _, job in _each(kinds, lambda k: self.kube.get(k.resource, name, ns))]
        if not found:
            what = kinds[0].crd.kind if kind else "job"
            raise NotFound(f'{what} "{name}" not found in namespace "{ns}"', status=404)
        if len(found) > 1:
            names = ", ".join(f"{of_object(j).cli_name}/{name}" for j in found)
            raise BadJob(f"several jobs are named {name}: say which, as one of {names}")
        return found[0]

    def parse(self, job: Mapping[str, Any]) -> JobObject[Any, Any]:
        """The job as its kind's pydantic model."""
        return of_object(job).model.from_dict(job)

    def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        kinds: Iterable[str] | None = None,
    ) -> builtins.list[Obj]:
        """Every job of every kind (or of ``kinds``); kinds the cluster does not
        serve are left out."""
        ns = None if all_namespaces else (namespace or self.namespace)
        chosen: builtins.list[Served] = [named_kind(k) for k in kinds] if kinds else list(KINDS)
        jobs: builtins.list[Obj] = []
        for k, (items, _) in _each(chosen, lambda k: self.kube.list_all(k.resource, ns)):
            for item in items:
                item.setdefault("apiVersion", k.crd.api_version)
                item.setdefault("kind", k.crd.kind)
            jobs.extend(items)
        return [dict(j) for j in views.sort_jobs(jobs)]

    def pods(
        self,
        job: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
    ) -> builtins.list[Obj]:
        """A job's pods (or every pod of the namespace, or of the cluster)."""
        if job is not None:
            meta = job["metadata"]
            selector = f"{JOB_NAME}={meta['name']},{JOB_KIND}={job['kind']}"
            items, _ = call(
                lambda: self.kube.list_all(PODS, meta["namespace"], label_selector=selector)
            )
            return items
        ns = None if all_namespaces else (namespace or self.namespace)
        items, _ = call(lambda: self.kube.list_all(PODS, ns))
        return items

    def workloads(
        self,
        job: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
    ) -> builtins.list[Obj]:
        """The Kueue Workloads the operator made for a job (or for every job of
        the namespace, or of the cluster): on MultiKueue's manager, where each
        says which worker cluster runs its job (:func:`views.worker_cluster`).
        None on a cluster without Kueue's Workload API."""
        if job is not None:
            meta = job["metadata"]
            ns: str | None = meta["namespace"]
            selector = f"{JOB_NAME}={meta['name']},{JOB_KIND}={job['kind']}"
        else:
            ns = None if all_namespaces else (namespace or self.namespace)
            selector = CHILD_SELECTOR
        try:
            items, _ = self.kube.list_all(WORKLOADS, ns, label_selector=selector)
        except kube.NotFound:
            return []  # Kueue is not installed
        except kube.ApiError as exc:
            raise from_api(exc) from None
        return items

    def events(
        self, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] = ()
    ) -> builtins.list[Obj]:
        """The job's and its pods' Events, oldest first."""
        meta = job["metadata"]
        names = {meta["name"], *(p["metadata"]["name"] for p in pods)}
        items, _ = call(lambda: self.kube.list_all(EVENTS, meta["namespace"]))
        mine = [e for e in items if (e.get("involvedObject") or {}).get("name") in names]
        return sorted(mine, key=_event_time)

    def nodes(self) -> builtins.list[Obj]:
        items, _ = call(lambda: self.kube.list_all(NODES))
        return items

    def tensorboard(self, name: str, namespace: str | None = None) -> Obj:
        """The TensorBoard of that name: a job's own (it has the job's name) or
        one created alone."""
        ns = namespace or self.namespace
        return call(lambda: self.kube.get(TENSORBOARD.resource, name, ns))

    def tensorboard_forward(
        self,
        name: str,
        namespace: str | None = None,
        *,
        address: str = "127.0.0.1",
        port: int = 0,
    ) -> tuple[Obj, Forwarder]:
        """The TensorBoard ``name`` (a job's: it has the job's name) and a
        :class:`Forwarder` from ``address:port`` to its pod's port 6006 (not yet
        serving: call ``start()`` or ``serve_forever()``)."""
        tb = self.tensorboard(name, namespace)
        return tb, to_tensorboard(self.kube.connection, tb, address, port)

    # -- waiting ---------------------------------------------------------------------

    def wait(
        self,
        name: str,
        until: str = "Finished",
        *,
        timeout: float | None = None,
        kind: str | None = None,
        namespace: str | None = None,
        interval: float = 1.0,
        progress: Callable[[Obj], None] | None = None,
    ) -> Obj:
        """Wait until the job is ``Running``, ``Succeeded``, ``Paused`` or
        ``Finished`` (succeeded or failed) and return it. :class:`JobFailed` when
        it fails (unless ``Finished`` was wanted), :class:`WaitTimeout` when
        ``timeout`` passes; ``progress`` sees the job each time its phase or
        reason changes."""
        chosen = kind

        def fetch() -> Obj:  # of the kind found first, from then on
            nonlocal chosen
            job = self.get(name, chosen, namespace)
            chosen = job_kind_of(job).cli_name
            return job

        return wait_for(fetch, name, until, timeout=timeout, interval=interval, progress=progress)


def _event_time(event: Mapping[str, Any]) -> float:
    stamp = parse_time(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )
    return stamp.timestamp() if stamp else 0.0
