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
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from t9k_operator import kube
from t9k_operator.api.crd import JobObject
from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.resources import EVENTS, NODES, PODS
from t9k_operator.sdk import views
from t9k_operator.sdk.build import check
from t9k_operator.sdk.errors import (
    BadJob,
    ConnectionFailed,
    JobFailed,
    NotFound,
    T9kError,
    Unsupported,
    WaitTimeout,
    from_api,
)
from t9k_operator.sdk.forward import Forwarder
from t9k_operator.sdk.kinds import KINDS, TENSORBOARD, Kind, by_name, of_object

FIELD_MANAGER = "t9k"
TENSORBOARD_PORT = 6006
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
WAIT_STATES = ("Running", "Succeeded", "Finished", "Paused")
T = TypeVar("T")

Obj = dict[str, Any]


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


@dataclass(frozen=True)
class LogLine:
    """One line of a replica's log; ``info`` lines are the follower's own notes
    (a replica restarted, a stream reconnected), not the container's."""

    replica: str
    text: str
    pod: str = ""
    info: bool = False


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except kube.ApiError as exc:
        raise from_api(exc) from None


class Client:
    """Jobs and TensorBoards of one cluster (and a default namespace)."""

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
            kube_client = _call(lambda: kube.KubeClient.from_config(kubeconfig, context, options))
        self.kube = kube_client
        self.namespace = namespace or context_namespace(kubeconfig, context)

    def close(self) -> None:
        self.kube.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------

    def submit(
        self, source: str | Mapping[str, Any] | Sequence[Mapping[str, Any]] | JobObject[Any, Any]
    ) -> list[Obj]:
        """Server-side apply each job (or TensorBoard) in ``source`` (YAML or JSON
        text, one manifest or a list, or a model), with strict field validation:
        an unknown field is refused, with the API server's message."""
        manifests = _manifests(source)
        applied: builtins.list[Obj] = []
        for manifest in manifests:
            kind = _kind_of(manifest)
            meta = dict(manifest.get("metadata") or {})
            if not meta.get("name"):
                raise BadJob(f"a {kind.kind} without metadata.name")
            namespace = str(meta.get("namespace") or self.namespace)
            meta["namespace"] = namespace
            body = {**manifest, "metadata": meta}
            applied.append(self._apply(kind, body, namespace))
        return applied

    def _apply(self, kind: Kind, body: Obj, namespace: str) -> Obj:
        return _call(
            lambda: self.kube.patch(
                kind.resource,
                str(body["metadata"]["name"]),
                body,
                namespace,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                field_validation="Strict",
            )
        )

    def create(self, job: JobObject[Any, Any] | Mapping[str, Any]) -> Obj:
        """Create a job (a model from ``t9k_operator.api``, or a manifest); an
        existing one of the name is :class:`AlreadyExists`."""
        manifest = job.to_dict() if isinstance(job, JobObject) else dict(job)
        kind = _kind_of(manifest)
        check(kind, manifest)
        meta = dict(manifest.get("metadata") or {})
        namespace = str(meta.get("namespace") or self.namespace)
        meta["namespace"] = namespace
        body = {**manifest, "metadata": meta}
        body.pop("status", None)
        return _call(
            lambda: self.kube.create(kind.resource, body, namespace, field_validation="Strict")
        )

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
                f"a {k.kind} cannot be {'paused' if on else 'resumed'}: its API has no run mode"
            )
        patch = {"spec": {"runMode": {"pause": {"enabled": on}}}}
        ns = job["metadata"]["namespace"]
        return _call(lambda: self.kube.patch(k.resource, name, patch, ns))

    def delete(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        """Delete a job; its pods, Services, ConfigMaps and TensorBoard go with it."""
        job = self.get(name, kind, namespace)
        k = of_object(job)
        ns = job["metadata"]["namespace"]
        uid = job["metadata"].get("uid")
        return _call(lambda: self.kube.delete(k.resource, name, ns, uid=uid))

    # -- reading ---------------------------------------------------------------------

    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj:
        """A job by name: of ``kind`` if given, else of whichever job kind has
        one of that name (:class:`BadJob` when several have)."""
        ns = namespace or self.namespace
        kinds = [_named_kind(kind)] if kind else list(KINDS)
        found = []
        for k in kinds:
            try:
                found.append(self.kube.get(k.resource, name, ns))
            except kube.NotFound:
                continue
            except kube.ApiError as exc:
                raise from_api(exc) from None
        if not found:
            what = kinds[0].kind if kind else "job"
            raise NotFound(f'{what} "{name}" not found in namespace "{ns}"', status=404)
        if len(found) > 1:
            names = ", ".join(f"{of_object(j).name}/{name}" for j in found)
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
        chosen = [_named_kind(k) for k in kinds] if kinds else list(KINDS)
        jobs: builtins.list[Obj] = []
        for k in chosen:
            try:
                items, _ = self.kube.list_all(k.resource, ns)
            except kube.NotFound:
                continue
            except kube.ApiError as exc:
                raise from_api(exc) from None
            for item in items:
                item.setdefault("apiVersion", k.crd.api_version)
                item.setdefault("kind", k.kind)
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
            items, _ = _call(
                lambda: self.kube.list_all(PODS, meta["namespace"], label_selector=selector)
            )
            return items
        ns = None if all_namespaces else (namespace or self.namespace)
        items, _ = _call(lambda: self.kube.list_all(PODS, ns))
        return items

    def events(
        self, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] = ()
    ) -> builtins.list[Obj]:
        """The job's and its pods' Events, oldest first."""
        meta = job["metadata"]
        names = {meta["name"], *(p["metadata"]["name"] for p in pods)}
        items, _ = _call(lambda: self.kube.list_all(EVENTS, meta["namespace"]))
        mine = [e for e in items if (e.get("involvedObject") or {}).get("name") in names]
        return sorted(mine, key=_event_time)

    def nodes(self) -> builtins.list[Obj]:
        items, _ = _call(lambda: self.kube.list_all(NODES))
        return items

    def tensorboard(self, name: str, namespace: str | None = None) -> Obj:
        """The TensorBoard of that name: a job's own (it has the job's name) or
        one created alone."""
        ns = namespace or self.namespace
        return _call(lambda: self.kube.get(TENSORBOARD.resource, name, ns))

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
        pod = (tb.get("status") or {}).get("pod")
        if not pod:
            reason = views.reason_of_tensorboard(tb)
            raise NotFound(f"TensorBoard {name} has no pod yet ({reason})", status=404)
        ns = tb["metadata"]["namespace"]
        return tb, Forwarder(self.kube.connection, ns, pod, TENSORBOARD_PORT, address, port)

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
        if until not in WAIT_STATES:
            raise BadJob(f"cannot wait for {until!r}: one of {', '.join(WAIT_STATES)}")
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[str, str] | None = None
        job: Obj = {}
        while True:
            job = self.get(name, kind, namespace)
            kind = of_object(job).name
            phase, why = views.phase(job), views.reason(job)
            if progress is not None and (phase, why) != seen:
                progress(job)
            seen = (phase, why)
            if phase == until or (until == "Finished" and phase in views.FINISHED):
                return job
            if until == "Running" and phase == "Succeeded":
                return job
            if phase == "Failed":
                raise JobFailed(name, why or "Failed", views.message(job))
            if until != "Finished" and phase == "Succeeded":
                raise JobFailed(name, "Succeeded", f"the job finished without being {until}")
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(name, until, phase, why, float(timeout or 0))
            pause = (
                interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0))
            )
            time.sleep(pause)

    # -- logs ------------------------------------------------------------------------

    def logs(
        self,
        name: str,
        *,
        replica: str | None = None,
        all_replicas: bool = False,
        follow: bool = False,
        since_seconds: int | None = None,
        kind: str | None = None,
        namespace: str | None = None,
        poll: float = 1.0,
    ) -> Iterator[LogLine]:
        """A job's log lines: of one replica (``worker-1``; by default its leader:
        master, launcher, else the first worker) or of all of them interleaved.
        ``follow`` keeps reading, picks up a restarted replica's new pod, and
        ends when the job has finished and every log has been read."""
        job = self.get(name, kind, namespace)
        pods = self.pods(job)
        replicas = sorted(views.replica_of(name, p["metadata"]["name"]) for p in pods)
        if replica:
            wanted = [replica]
        elif all_replicas:
            wanted = replicas
        else:
            if not replicas and follow:  # the leader is known once the pods are
                replicas = self._await_replicas(job, poll)
            if not replicas:
                raise NotFound(f"job {name} has no pods (yet)", status=404)
            wanted = [_leader(replicas)]
        if replica and replica not in replicas and not follow:
            raise NotFound(
                f"job {name} has no replica {replica}"
                + (f" (it has {', '.join(replicas)})" if replicas else ""),
                status=404,
            )
        if not follow:
            by_replica = {views.replica_of(name, p["metadata"]["name"]): p for p in pods}
            for r in wanted:
                for _, line in self._read(by_replica[r], r, False, since_seconds):
                    yield line
            return
        yield from self._follow(job, wanted, all_replicas, since_seconds, poll)

    def _await_replicas(self, job: Obj, poll: float) -> builtins.list[str]:
        """The job's replicas once it has pods; none if it finishes first."""
        meta = job["metadata"]
        while True:
            pods = self.pods(job)
            if pods:
                return sorted(views.replica_of(meta["name"], p["metadata"]["name"]) for p in pods)
            current = self.get(meta["name"], of_object(job).name, meta["namespace"])
            if views.phase(current) in views.FINISHED:
                return []
            time.sleep(poll)

    def _read(
        self,
        pod: Mapping[str, Any],
        replica: str,
        follow: bool,
        since: int | None,
        timestamps: bool = False,
        watchdog: Callable[[kube.LogStream], None] | None = None,
    ) -> Iterator[tuple[str, LogLine]]:
        """(timestamp or "", line) of the pod's training container's log;
        ``watchdog`` gets the open stream, to close it from another thread."""
        meta = pod["metadata"]
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        container = _training_container(pod)
        try:
            stream = self.kube.pod_logs(
                meta["namespace"],
                meta["name"],
                container=container,
                follow=follow,
                since_seconds=since,
                timestamps=timestamps,
            )
            if watchdog is not None:
                watchdog(stream)
            for text in stream:
                stamp = ""
                if timestamps:
                    stamp, _, text = text.partition(" ")
                yield stamp, LogLine(replica, text, meta["name"])
        except kube.BadRequest:
            return  # the container is not running yet, or never ran
        except kube.ApiError as exc:
            raise from_api(exc) from None

    def _follow(
        self,
        job: Obj,
        wanted: Sequence[str],
        discover: bool,
        since: int | None,
        poll: float,
    ) -> Iterator[LogLine]:
        # Lines, a new replica's name (discovered), a follower's error, or its end (None).
        # Unbounded: a follower never blocks on a reader that stopped reading.
        lines: queue.Queue[LogLine | str | BaseException | None] = queue.Queue()
        stop = threading.Event()
        name = job["metadata"]["name"]
        finished = threading.Event()
        threads: dict[str, threading.Thread] = {}

        def follower(replica: str) -> None:
            done: set[str] = set()
            followed = ""
            last = ""  # the newest line's timestamp: a reconnect skips what was read
            try:
                while not stop.is_set():
                    pod = self._pod(job, replica)
                    uid = str((pod or {}).get("metadata", {}).get("uid") or "")
                    if pod is None or uid in done or not _started(pod):
                        if finished.is_set():
                            return
                        stop.wait(poll)
                        continue
                    pod_name = pod["metadata"]["name"]
                    if uid != followed:
                        if followed:
                            note = f"replica {replica} restarted: following its new pod"
                            lines.put(LogLine(replica, note, pod_name, True))
                        followed, last = uid, ""

                    def watchdog(stream: kube.LogStream, uid: str = uid) -> None:
                        threading.Thread(
                            target=self._close_when_over,
                            args=(job, replica, uid, stream, poll, stop),
                            daemon=True,
                        ).start()

                    try:
                        for stamp, line in self._read(pod, replica, True, since, True, watchdog):
                            if stop.is_set():
                                return
                            if stamp and stamp <= last:
                                continue
                            last = stamp or last
                            lines.put(line)
                    except ConnectionFailed as exc:
                        note = f"log stream of {pod_name} broken ({exc}); reconnecting"
                        lines.put(LogLine(replica, note, pod_name, True))
                    if _ended(self._pod(job, replica), uid):
                        done.add(uid)
                    else:
                        stop.wait(poll)
            except BaseException as exc:  # handed to the reader
                lines.put(exc)
            finally:
                lines.put(None)

        def start(replica: str) -> None:
            t = threading.Thread(
                target=follower, args=(replica,), daemon=True, name=f"logs-{replica}"
            )
            threads[replica] = t
            t.start()

        for r in wanted:
            start(r)

        def watcher() -> None:
            try:
                while not stop.is_set():
                    current = self.get(name, of_object(job).name, job["metadata"]["namespace"])
                    if views.phase(current) in views.FINISHED:
                        finished.set()
                    if discover:
                        for pod in self.pods(job):
                            r = views.replica_of(name, pod["metadata"]["name"])
                            if r not in threads:
                                lines.put(r)
                    if finished.is_set():
                        lines.put("")  # wakes the reader, which then stops discovering
                        return
                    stop.wait(poll)
            except BaseException as exc:
                lines.put(exc)

        watch = threading.Thread(target=watcher, daemon=True, name="logs-job")
        watch.start()
        running = len(threads)
        try:
            while running or (discover and not finished.is_set()):
                item = lines.get()
                if item is None:
                    running -= 1
                elif isinstance(item, str):
                    if item and item not in threads:
                        running += 1
                        start(item)
                elif isinstance(item, BaseException):
                    if isinstance(item, T9kError):
                        raise item
                    raise T9kError(str(item))
                else:
                    yield item
        finally:
            stop.set()

    def _close_when_over(
        self,
        job: Mapping[str, Any],
        replica: str,
        uid: str,
        stream: kube.LogStream,
        poll: float,
        stop: threading.Event,
    ) -> None:
        """Close a followed log once its pod is over (ended, deleted or replaced)
        for a poll interval more, or the reader stopped: a kubelet ends the stream
        itself when the container exits, but a stream may outlive its pod (a node
        that stopped answering, KWOK's simulated kubelets)."""
        over = False
        while not stream.closed:
            if stop.wait(poll):
                break
            try:
                ended = _ended(self._pod(job, replica), uid)
            except T9kError:
                continue
            if ended and over:
                break
            over = ended
        stream.close()

    def _pod(self, job: Mapping[str, Any], replica: str) -> Obj | None:
        meta = job["metadata"]
        try:
            return self.kube.get(PODS, f"{meta['name']}-{replica}", meta["namespace"])
        except kube.NotFound:
            return None
        except kube.ApiError as exc:
            raise from_api(exc) from None


def _started(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")


def _ended(pod: Mapping[str, Any] | None, uid: Any) -> bool:
    """Whether the pod followed is over: gone, replaced, or its containers ended."""
    if pod is None or pod["metadata"].get("uid") != uid:
        return True
    if pod["metadata"].get("deletionTimestamp"):
        return True
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _leader(replicas: Sequence[str]) -> str:
    for prefix in ("master", "launcher", "worker", "Worker"):
        for r in replicas:
            if r == prefix or r.startswith(prefix + "-"):
                return r
    return replicas[0]


TRAINING_CONTAINERS = ("pytorch", "python", "worker", "launcher", "mindspore")


def _training_container(pod: Mapping[str, Any]) -> str | None:
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    for name in TRAINING_CONTAINERS:
        if name in containers:
            return name
    return str(containers[0]) if containers else None


def _event_time(event: Mapping[str, Any]) -> float:
    stamp = views.parse_time(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )
    return stamp.timestamp() if stamp else 0.0


def _manifests(source: Any) -> builtins.list[Obj]:
    if isinstance(source, JobObject):
        return [source.to_dict()]
    if isinstance(source, Mapping):
        docs: builtins.list[Any] = [source]
    elif isinstance(source, str):
        try:
            docs = [d for d in yaml.safe_load_all(source) if d is not None]
        except yaml.YAMLError as exc:
            raise BadJob(f"not YAML or JSON: {exc}") from None
    else:
        docs = list(source)
    out: builtins.list[Obj] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise BadJob("a manifest must be a mapping (apiVersion, kind, metadata, spec)")
        if doc.get("kind") == "List":
            out.extend(_manifests(list(doc.get("items") or [])))
        else:
            out.append(dict(doc))
    if not out:
        raise BadJob("no manifest to submit")
    return out


def _kind_of(manifest: Mapping[str, Any]) -> Kind:
    try:
        return of_object(manifest)
    except KeyError:
        known = ", ".join(f"{k.crd.api_version} {k.kind}" for k in (*KINDS, TENSORBOARD))
        raise BadJob(
            f"not a job this tool runs: {manifest.get('apiVersion')} {manifest.get('kind')} "
            f"(it runs {known})"
        ) from None


def _named_kind(name: str) -> Kind:
    try:
        return by_name(name)
    except KeyError:
        raise BadJob(
            f"unknown kind {name!r}: pytorch, deepspeed, colossalai, mindspore or tensorboard"
        ) from None
