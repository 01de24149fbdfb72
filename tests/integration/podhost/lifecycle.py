"""A running container's life as kubelet sees it, and what it reports of it:
each container's status, the pod's phase, and stopping containers with a grace
period. The pod (pod.py) starts the processes and its worker (worker.py)
orders them; this module watches them.

References are to kubernetes/kubernetes pkg/kubelet."""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# kuberuntime_container.go killContainer: a container is never given less than
# this to stop, unless the deletion asks for less.
MINIMUM_GRACE_SECONDS = 2
# The API's default for spec.terminationGracePeriodSeconds.
DEFAULT_GRACE_SECONDS = 30
# The API's defaults for a probe (core/v1 defaults.go SetDefaults_Probe).
PROBE_DEFAULTS = {"periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 1}


class PodFailed(AssertionError):
    """The pod cannot start or go on, as kubelet would hold or fail it."""


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def stamp(at: datetime.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def is_sidecar(c: Mapping[str, Any]) -> bool:
    """A native sidecar: an init container with ``restartPolicy: Always``
    (podutil.IsRestartableInitContainer)."""
    return c.get("restartPolicy") == "Always"


class Container:
    """One started container: its process, when it started and ended, and
    how. The exit code is the runtime's: the process's own, or 128+9 when it
    was SIGKILLed (containerd reports a signalled task as 128+signal)."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        proc: subprocess.Popen[bytes],
        pid1: Callable[[], int],
    ) -> None:
        self.spec = spec
        self.name: str = spec["name"]
        self.proc = proc
        self._pid1 = pid1
        self.started_at = now()
        self.finished_at: datetime.datetime | None = None
        self.exit_code: int | None = None
        # kubelet's ContainerStatus.started: true once the startupProbe has
        # passed, at once for a container without one (prober_manager.go).
        self.started = "startupProbe" not in spec
        self.killed = False
        self.done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        code = self.proc.wait()
        self.finished_at = now()
        # A pid 1 killed by a signal makes unshare (between us and it) exit 1,
        # so the signal is known from having sent it.
        self.exit_code = 128 + signal.SIGKILL if self.killed else (128 - code if code < 0 else code)
        self.done.set()

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def status(self) -> dict[str, Any]:
        """kubelet's ContainerStatus (kubelet_pods.go convertToAPIContainerStatuses):
        running with its start, or terminated with the exit code and the
        runtime's reason, ``Completed`` for 0 and ``Error`` otherwise."""
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "restartCount": 0,
            "started": self.running and self.started,
            "ready": self.running and self.started,
        }
        if self.running:
            status["state"] = {"running": {"startedAt": stamp(self.started_at)}}
        else:
            assert self.finished_at is not None and self.exit_code is not None
            status["state"] = {
                "terminated": {
                    "exitCode": self.exit_code,
                    "reason": "Completed" if self.exit_code == 0 else "Error",
                    "startedAt": stamp(self.started_at),
                    "finishedAt": stamp(self.finished_at),
                }
            }
        return status

    def signal(self, sig: int) -> None:
        """``sig`` to the container's pid 1, as the runtime sends it from
        outside the container's PID namespace: the kernel delivers SIGKILL
        always, any other signal only when pid 1 handles it."""
        if not self.running:
            return
        with contextlib.suppress(AssertionError):  # it ended before it was found
            pid = self._pid1()
            # Marked before the kill, so the watcher sees it when pid 1 dies.
            self.killed = self.killed or sig == signal.SIGKILL
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                self.killed = False  # it ended on its own first

    def stop(self, grace: float) -> None:
        """The runtime's StopContainer (kuberuntime_container.go killContainer):
        SIGTERM, then SIGKILL once ``grace`` seconds have passed."""
        self.signal(signal.SIGTERM)
        if not self.done.wait(grace):
            self.signal(signal.SIGKILL)
            self.done.wait(10)

    def wait_started(self, probe: Callable[[list[str], float], int]) -> None:
        """Until the container has started: its ``startupProbe`` (exec only)
        passes, tried every ``periodSeconds``. kubelet restarts a container
        whose probe fails ``failureThreshold`` times; here that fails the pod."""
        spec = self.spec.get("startupProbe")
        if spec is None:
            return
        if "exec" not in spec:
            raise AssertionError(f"{self.name}: the pod host runs only exec probes")
        settings = {**PROBE_DEFAULTS, **spec}
        time.sleep(float(spec.get("initialDelaySeconds", 0)))
        for _ in range(int(settings["failureThreshold"])):
            if not self.running:
                break
            if probe(spec["exec"]["command"], float(settings["timeoutSeconds"])) == 0:
                self.started = True
                return
            time.sleep(float(settings["periodSeconds"]))
        raise AssertionError(f"{self.name}: its startupProbe failed (kubelet would restart it)")


def waiting(c: Mapping[str, Any], has_init: bool) -> dict[str, Any]:
    """A container not started yet (kubelet_pods.go convertToAPIContainerStatuses'
    default state): waiting ``PodInitializing`` in a pod with init containers,
    ``ContainerCreating`` in one without."""
    reason = "PodInitializing" if has_init else "ContainerCreating"
    return {
        "name": c["name"],
        "image": c.get("image", ""),
        "restartCount": 0,
        "started": False,
        "ready": False,
        "state": {"waiting": {"reason": reason}},
    }


def statuses(
    specs: Iterable[Mapping[str, Any]],
    containers: Mapping[str, Container],
    *,
    has_init: bool,
    init: bool,
) -> list[dict[str, Any]]:
    """The statuses of ``specs``: init containers' in the spec's order
    (kubetypes.SortStatusesOfInitContainers), the others' sorted by name
    (kubetypes.SortedContainerStatuses), as convertToAPIContainerStatuses
    orders them."""
    started = dict(containers)  # the pod worker may add one meanwhile
    out = [
        started[c["name"]].status() if c["name"] in started else waiting(c, has_init) for c in specs
    ]
    return out if init else sorted(out, key=lambda s: str(s["name"]))


def phase(
    spec: Mapping[str, Any],
    init_statuses: list[dict[str, Any]],
    container_statuses: list[dict[str, Any]],
    *,
    terminal: bool,
) -> str:
    """kubelet_pods.go getPhase, its ContainerRestartRules gate off (the
    default): pending while a regular init container has not succeeded or a
    sidecar has not started; sidecars count as running while they run and
    not at all once stopped; a ``terminal`` pod (being deleted, nothing left
    running) is Succeeded or Failed whatever its restartPolicy."""
    policy = spec.get("restartPolicy") or "Always"
    sidecars = {c["name"] for c in spec.get("initContainers") or [] if is_sidecar(c)}
    pending_init = failed_init = 0
    running = waiting_ = stopped = succeeded = 0
    for s in init_statuses:
        state = s["state"]
        if s["name"] in sidecars:
            if "running" in state:
                running += 1
                pending_init += 0 if s["started"] else 1
            elif "waiting" in state:
                pending_init += 1
                waiting_ += 1
        elif "terminated" in state:
            failed_init += state["terminated"]["exitCode"] != 0
        else:
            pending_init += 1
    for s in container_statuses:
        state = s["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        else:
            waiting_ += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or waiting_:
        return "Pending"
    if running:
        return "Running"
    if terminal:
        return "Succeeded" if stopped == succeeded else "Failed"
    if policy == "Always":
        return "Running"  # kubelet restarts them
    if stopped == succeeded:
        return "Succeeded"
    return "Failed" if policy == "Never" else "Running"


def stop_in_order(regular: list[Container], sidecars: list[Container], grace: float) -> None:
    """kuberuntime_termination_order.go: the regular containers stop
    together, each given ``grace``; then the sidecars one by one in the
    reverse of their order in the spec, each given what is left of ``grace``
    but never less than MINIMUM_GRACE_SECONDS (the sidecar KEP's termination
    sequence)."""
    deadline = time.monotonic() + grace
    threads = [threading.Thread(target=c.stop, args=(grace,)) for c in regular]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in reversed(sidecars):
        c.stop(max(deadline - time.monotonic(), MINIMUM_GRACE_SECONDS))
