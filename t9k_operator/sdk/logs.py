"""Reading a job's logs, the SDK client's :meth:`~LogReads.logs`: one replica's
or all of them interleaved, read once or followed across restarts until the job ends.

:class:`LogReads` is the client's part that reads logs, on the reads of jobs and
pods the client gives it (as :class:`~t9k_operator.sdk.writing.Writing` is its
writes): this module stands below :mod:`t9k_operator.sdk.client` and imports
nothing of it.

A replica's log is its training container's (the container its kind's
builders launch the training in, by the kind's ``training_containers``); by
default ``t9k logs`` reads the replica whose outcome decides the job (its
kind's ``deciding_replica``). A followed log is closed here once its pod has
ended, been deleted or replaced (:mod:`t9k_operator.sdk.followed_pods`), since a
stream may outlive its pod (a node that stopped answering; KWOK's simulated
kubelets never end one).
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t9k_operator import kube
from t9k_operator.builders.common import (
    JOB_KIND,
    REPLICA_INDEX,
    REPLICA_TYPE,
)
from t9k_operator.kinds import pods as pod_rules
from t9k_operator.kinds.registry import by_kind, job_kind_of
from t9k_operator.resources import PODS
from t9k_operator.sdk import views
from t9k_operator.sdk.errors import ConnectionFailed, NotFound, T9kError, from_api
from t9k_operator.sdk.followed_pods import close_when_over, ended, started

Obj = dict[str, Any]


@dataclass(frozen=True)
class LogLine:
    """One line of a replica's log; ``info`` lines are the follower's own notes
    (a replica restarted, a stream reconnected), not the container's."""

    replica: str
    text: str
    pod: str = ""
    info: bool = False


class LogReads(ABC):
    """The log reads of a client of ``kube`` (:meth:`logs`); the client's reads
    give :meth:`get` and :meth:`pods`."""

    kube: kube.KubeClient

    @abstractmethod
    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    @abstractmethod
    def pods(
        self,
        job: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
    ) -> list[Obj]: ...

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
        """A job's log lines: of one replica (``worker-1``; by default the one
        whose outcome decides the job: the master, the launcher, worker-0) or
        of all of them interleaved. ``follow`` keeps reading, picks up a
        restarted replica's new pod, and ends when the job has finished and
        every log has been read."""
        return Logs(self).lines(
            name,
            replica=replica,
            all_replicas=all_replicas,
            follow=follow,
            since_seconds=since_seconds,
            kind=kind,
            namespace=namespace,
            poll=poll,
        )


class Logs:
    """A client's reader of job logs."""

    def __init__(self, client: LogReads) -> None:
        self.client = client

    def lines(
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
        """The lines :meth:`LogReads.logs` yields."""
        job = self.client.get(name, kind, namespace)
        pods = self.client.pods(job)
        replicas = sorted(views.replica_of(name, p["metadata"]["name"]) for p in pods)
        if replica:
            wanted = [replica]
        elif all_replicas:
            wanted = replicas
        else:
            if not replicas and follow:  # the leader is known once the pods are
                pods = self._await_pods(job, poll)
                replicas = sorted(views.replica_of(name, p["metadata"]["name"]) for p in pods)
            if not replicas:
                raise NotFound(f"job {name} has no pods (yet)", status=404)
            wanted = [leader(job, pods)]
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
        yield from _Following(self, job, all_replicas, since_seconds, poll).lines(wanted)

    def _await_pods(self, job: Obj, poll: float) -> list[Obj]:
        """The job's pods once it has some; none if it finishes first."""
        meta = job["metadata"]
        while True:
            pods = self.client.pods(job)
            if pods:
                return pods
            current = self.client.get(meta["name"], _cli_name(job), meta["namespace"])
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
        container = training_container(pod)
        try:
            stream = self.client.kube.pod_logs(
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

    def _pod(self, job: Mapping[str, Any], replica: str) -> Obj | None:
        meta = job["metadata"]
        try:
            return self.client.kube.get(PODS, f"{meta['name']}-{replica}", meta["namespace"])
        except kube.NotFound:
            return None
        except kube.ApiError as exc:
            raise from_api(exc) from None


class _Following:
    """One follow of a job's logs: a thread for each replica, following its pod
    and the pods that replace it, and one watching the job (for its end and,
    when ``discover``, for new replicas), all handing the reader one queue."""

    def __init__(
        self, logs: Logs, job: Obj, discover: bool, since: int | None, poll: float
    ) -> None:
        self.logs = logs
        self.job = job
        self.discover = discover
        self.since = since
        self.poll = poll
        # Lines, a new replica's name (discovered), a follower's error, or its end (None).
        # Unbounded: a follower never blocks on a reader that stopped reading.
        self.queue: queue.Queue[LogLine | str | BaseException | None] = queue.Queue()
        self.stop = threading.Event()
        self.name = job["metadata"]["name"]
        self.finished = threading.Event()
        self.threads: dict[str, threading.Thread] = {}

    def lines(self, wanted: Sequence[str]) -> Iterator[LogLine]:
        """The lines of the ``wanted`` replicas' logs (and of those discovered)
        as they come, until every follower has ended; a follower's or the
        watcher's error is raised as a :class:`T9kError`."""
        for r in wanted:
            self._start(r)
        watch = threading.Thread(target=self._watch, daemon=True, name="logs-job")
        watch.start()
        running = len(self.threads)
        try:
            while running or (self.discover and not self.finished.is_set()):
                item = self.queue.get()
                if item is None:
                    running -= 1
                elif isinstance(item, str):
                    if item and item not in self.threads:
                        running += 1
                        self._start(item)
                elif isinstance(item, BaseException):
                    if isinstance(item, T9kError):
                        raise item
                    raise T9kError(str(item))
                else:
                    yield item
        finally:
            self.stop.set()

    def _start(self, replica: str) -> None:
        """Start the replica's follower thread."""
        t = threading.Thread(
            target=self._follow, args=(replica,), daemon=True, name=f"logs-{replica}"
        )
        self.threads[replica] = t
        t.start()

    def _follow(self, replica: str) -> None:
        """Follow the replica's log, pod after pod, until the reader stops or the
        job has finished and no pod of the replica is left to read; hand the
        reader its lines, a note at each new pod, an error, and its end."""
        done: set[str] = set()
        followed = ""
        last = ""  # the newest line's timestamp: a reconnect skips what was read
        try:
            while not self.stop.is_set():
                pod = self.logs._pod(self.job, replica)
                uid = str((pod or {}).get("metadata", {}).get("uid") or "")
                if pod is None or uid in done or not started(pod):
                    if self.finished.is_set():
                        return
                    self.stop.wait(self.poll)
                    continue
                if uid != followed:
                    if followed:
                        note = f"replica {replica} restarted: following its new pod"
                        self.queue.put(LogLine(replica, note, pod["metadata"]["name"], True))
                    followed, last = uid, ""
                newest = self._read_pod(pod, replica, uid, last)
                if newest is None:
                    return
                last = newest
                if ended(self.logs._pod(self.job, replica), uid):
                    done.add(uid)
                else:
                    self.stop.wait(self.poll)
        except BaseException as exc:  # handed to the reader
            self.queue.put(exc)
        finally:
            self.queue.put(None)

    def _read_pod(self, pod: Obj, replica: str, uid: str, last: str) -> str | None:
        """Hand the reader the lines of the pod's log stamped after ``last``, and
        a note if the stream broke (the caller reconnects); the newest line's
        timestamp, or None once the reader has stopped."""
        pod_name = pod["metadata"]["name"]

        def watchdog(stream: kube.LogStream) -> None:
            current = functools.partial(self.logs._pod, self.job, replica)
            threading.Thread(
                target=close_when_over,
                args=(stream, current, uid, self.poll, self.stop),
                daemon=True,
            ).start()

        try:
            for stamp, line in self.logs._read(pod, replica, True, self.since, True, watchdog):
                if self.stop.is_set():
                    return None
                if stamp and stamp <= last:
                    continue
                last = stamp or last
                self.queue.put(line)
        except ConnectionFailed as exc:
            note = f"log stream of {pod_name} broken ({exc}); reconnecting"
            self.queue.put(LogLine(replica, note, pod_name, True))
        return last

    def _watch(self) -> None:
        """Watch the job until it has finished, then wake the reader; meanwhile
        hand it each replica without a follower, when ``discover``."""
        try:
            while not self.stop.is_set():
                current = self.logs.client.get(
                    self.name, _cli_name(self.job), self.job["metadata"]["namespace"]
                )
                if views.phase(current) in views.FINISHED:
                    self.finished.set()
                if self.discover:
                    for pod in self.logs.client.pods(self.job):
                        r = views.replica_of(self.name, pod["metadata"]["name"])
                        if r not in self.threads:
                            self.queue.put(r)
                if self.finished.is_set():
                    self.queue.put("")  # wakes the reader, which then stops discovering
                    return
                self.stop.wait(self.poll)
        except BaseException as exc:
            self.queue.put(exc)


def _cli_name(job: Mapping[str, Any]) -> str:
    return job_kind_of(job).cli_name


def leader(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> str:
    """The replica whose log is read by default: the one whose outcome decides
    the job (its kind's ``deciding_replica``); without its pod, the first by name."""
    name = job["metadata"]["name"]
    replicas = sorted(views.replica_of(name, p["metadata"]["name"]) for p in pods)
    kind = job_kind_of(job)
    try:
        type_, index = kind.deciding_replica(kind.view(kind.model.from_dict(job)))
    except views.SPEC_ERRORS:
        return replicas[0]
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(REPLICA_TYPE) == type_ and labels.get(REPLICA_INDEX) == str(index):
            return views.replica_of(name, pod["metadata"]["name"])
    return replicas[0]


def training_container(pod: Mapping[str, Any]) -> str | None:
    """The name of the pod's training container, by its kind's ``training_containers``
    (as the builders chose it), else its first container's."""
    try:
        names = by_kind(
            str((pod["metadata"].get("labels") or {}).get(JOB_KIND))
        ).training_containers
    except KeyError:
        names = ()
    return pod_rules.training_container(pod, names)
