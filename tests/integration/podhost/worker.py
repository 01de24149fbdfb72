"""kubelet's pod worker for one pod: its containers started in kubelet's
order, its sidecars stopped once the others are done, its graceful deletion,
and the status kubelet reports of it. The pod (pod.py) makes each
container's process; lifecycle.py watches it."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

from tests.integration.podhost import lifecycle
from tests.integration.podhost.lifecycle import Container, PodFailed, is_sidecar

Exec = Callable[[str, list[str], float], subprocess.CompletedProcess[str]]


class PodWorker:
    """The containers of ``pod`` as kubelet runs them. ``start`` makes a
    container's process, ``pid1`` finds a container's first process and
    ``exec`` runs a command in a container (for exec probes)."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        start: Callable[[Mapping[str, Any]], subprocess.Popen[bytes]],
        pid1: Callable[[str], int],
        exec_: Exec,
    ) -> None:
        self.pod = pod
        self.name = pod["metadata"]["name"]
        self._start_process = start
        self._pid1 = pid1
        self._exec = exec_
        self.containers: dict[str, Container] = {}
        # Set once the init containers are through and the others started,
        # or the pod could go no further (then ``error`` says why, if it
        # could not start at all).
        self.initialized = threading.Event()
        self.error: BaseException | None = None
        self.deletion_timestamp: str | None = None
        self._lock = threading.Lock()
        self._closed = False

    def run(self) -> None:
        """The init containers in order, then the others, then the sidecars'
        stop once the others are done."""
        try:
            started = self._start_init_containers() and self._start_regular_containers()
        except BaseException as exc:  # handed to run_pod
            self.error = exc
            started = False
        finally:
            self.initialized.set()
        if started:
            self._stop_sidecars_when_done()

    def close(self) -> None:
        """Start nothing more: the pod's processes are being killed."""
        with self._lock:
            self._closed = True

    def _start(self, c: Mapping[str, Any]) -> Container | None:
        with self._lock:
            if self.deletion_timestamp is not None or self._closed:
                return None  # kubelet starts nothing in a pod being deleted
            proc = self._start_process(c)
            name = c["name"]
            container = Container(c, proc, lambda: self._pid1(name))
            self.containers[name] = container
            return container

    def _start_init_containers(self) -> bool:
        """kuberuntime_manager.go computePodActions: an init container starts
        once the one before it has succeeded, or, for a sidecar
        (``restartPolicy: Always``), has started: its process runs and its
        startupProbe, if any, has passed (the "sidecar containers" docs). A
        failed one starts nothing further."""
        for c in self.pod["spec"].get("initContainers") or []:
            container = self._start(c)
            if container is None:
                return False
            if is_sidecar(c):
                container.wait_started(self._prober(c["name"]))
                continue
            if not container.done.wait(120):
                raise PodFailed(f"{self.name}: init container {c['name']} did not end")
            if container.exit_code != 0:
                # With restartPolicy Never the pod has failed and kubelet
                # stops the sidecars it started; otherwise kubelet would run
                # this init container again (restarts are not reproduced).
                if self.pod["spec"].get("restartPolicy") == "Never":
                    self._stop_sidecars()
                return False
        return True

    def _start_regular_containers(self) -> bool:
        return all(self._start(c) is not None for c in self.pod["spec"]["containers"])

    def _prober(self, container: str) -> Callable[[list[str], float], int]:
        """An exec probe of ``container``: the command's exit code."""

        def probe(argv: list[str], timeout: float) -> int:
            try:
                return self._exec(container, argv, timeout).returncode
            except subprocess.TimeoutExpired:
                return -1

        return probe

    def _sidecars(self) -> list[Container]:
        inits = self.pod["spec"].get("initContainers") or []
        return [
            self.containers[c["name"]]
            for c in inits
            if is_sidecar(c) and c["name"] in self.containers
        ]

    def _grace(self) -> float:
        """The pod's terminationGracePeriodSeconds (30 when unset, as the API
        defaults it), never less than killContainer's minimum."""
        grace = self.pod["spec"].get(
            "terminationGracePeriodSeconds", lifecycle.DEFAULT_GRACE_SECONDS
        )
        return max(float(grace), lifecycle.MINIMUM_GRACE_SECONDS)

    def _stop_sidecars(self) -> None:
        lifecycle.stop_in_order([], self._sidecars(), self._grace())

    def _stop_sidecars_when_done(self) -> None:
        """computePodActions: once every regular container has exited and
        none is to restart (restartPolicy Never, or OnFailure and all
        succeeded), kubelet kills the pod, which stops its sidecars
        (kuberuntime_termination_order.go: after the regular containers, in
        reverse order). With Always kubelet would restart them; the pod host
        restarts nothing and leaves such a pod as it is."""
        regular = [self.containers[c["name"]] for c in self.pod["spec"]["containers"]]
        for c in regular:
            c.done.wait()
        policy = self.pod["spec"].get("restartPolicy") or "Always"
        succeeded = all(c.exit_code == 0 for c in regular)
        if self.deletion_timestamp is None and (
            policy == "Never" or (policy == "OnFailure" and succeeded)
        ):
            self._stop_sidecars()

    def delete(self, grace_seconds: float | None = None) -> None:
        """A graceful deletion of the pod, as kubelet carries it out: the pod
        gets its deletionTimestamp at once, then every running container gets
        SIGTERM and, ``grace_seconds`` later (the pod's
        terminationGracePeriodSeconds when not given, as the API server sets
        deletionGracePeriodSeconds), SIGKILL: kuberuntime_container.go
        killContainer. Sidecars stop after the others
        (kuberuntime_termination_order.go). Returns at once."""
        if grace_seconds is None:
            grace_seconds = self.pod["spec"].get(
                "terminationGracePeriodSeconds", lifecycle.DEFAULT_GRACE_SECONDS
            )
        with self._lock:
            self.deletion_timestamp = lifecycle.stamp(lifecycle.now())
        sidecars = self._sidecars()
        others = [c for c in list(self.containers.values()) if c not in sidecars]
        threading.Thread(
            target=lifecycle.stop_in_order, args=(others, sidecars, float(grace_seconds)),
            daemon=True,
        ).start()  # fmt: skip

    def status(self, ip: str) -> dict[str, Any]:
        """The pod's status as kubelet reports it (kubelet_pods.go
        generateAPIPodStatus): its phase, IP (``ip``) and each container's
        status."""
        spec = self.pod["spec"]
        inits = spec.get("initContainers") or []
        init_statuses = lifecycle.statuses(inits, self.containers, has_init=bool(inits), init=True)
        regular = lifecycle.statuses(
            spec["containers"], self.containers, has_init=bool(inits), init=False
        )
        # A pod being deleted whose containers have all stopped is terminal.
        terminal = self.deletion_timestamp is not None and not any(
            c.running for c in list(self.containers.values())
        )
        status: dict[str, Any] = {
            "phase": lifecycle.phase(spec, init_statuses, regular, terminal=terminal),
            "podIP": ip,
            "containerStatuses": regular,
        }
        if inits:
            status["initContainerStatuses"] = init_statuses
        return status
