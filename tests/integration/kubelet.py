"""Drive a pod's status by hand, the way a kubelet reports it.

Pods that carry the annotation ``kwok.t9k.dev/manual: "true"`` are left alone
by the KWOK stages (hack/third_party/kwok/stages.yaml); a test moves them to Running,
Succeeded or Failed with chosen exit codes and restart counts through the
pod's status subresource, exactly where a kubelet writes.

What a real kubelet does, and this stand-in does too (the kubelet's source is
pkg/kubelet/kubelet_pods.go of Kubernetes 1.34):

* It runs only pods bound to its node: ``run`` and ``terminate`` wait for a
  scheduler's binding (``spec.nodeName``) and fail the test without one.
* ``containerStatuses`` and ``initContainerStatuses`` are sorted by container
  name, not listed in the spec's order (``convertToAPIContainerStatuses``
  ends with ``sort.Sort(kubetypes.SortedContainerStatuses(statuses))``).
* Every pod has an IP of its own and its node's ``hostIP``/``hostIPs``
  (``generateAPIPodStatus``); the stand-in gives the node's InternalIP (or,
  for a KWOK node that reports none, an address of that node's own) and an
  address made from the pod's uid.
* The kubelet writes its own conditions, ``PodScheduled`` among them, which it
  re-asserts ``True`` (``generateAPIPodStatus``: "set all Kubelet-owned
  conditions"), keeping the time it first became true.
* The phase follows ``getPhase``: ``Running`` while any regular container
  runs, whatever the others' exit codes; once every regular container has
  terminated, ``Succeeded`` if all exited 0, else ``Failed`` (restartPolicy
  Never, as the operator's pods have). Native sidecars (init containers with
  ``restartPolicy: Always``) do not count, and run until the regular
  containers have ended, when the kubelet stops them; regular init containers
  have terminated with 0 before any regular container started.
* A container that cannot start waits with kubelet's reason, its pod Pending,
  and kubelet records Events on the pod (``pull_fails``, ``pull_backs_off``,
  ``start``): see each method for the kubelet source it follows.
* A container the kernel's OOM killer ended is terminated ``OOMKilled`` with
  exit code 137 (``oom_kill``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import CONFIGMAPS, EVENTS, NODES, PODS, SECRETS
from tests.integration.kubelet_status import (
    default_container,
    disruption,
    ended,
    event,
    exited,
    image_of,
    init_statuses,
    node_ip,
    now,
    phase_of,
    pod_status,
    volume_refs,
    waiting,
)
from tests.integration.kubelet_status import (
    running as running_container,
)

MANUAL = {"kwok.t9k.dev/manual": "true"}
BIND_TIMEOUT = 30.0
"""How long ``run``/``terminate`` wait for a scheduler to bind the pod."""


def missing_volumes(client: KubeClient, pod: dict[str, Any]) -> list[tuple[str, str]]:
    """The pod's volumes kubelet cannot mount, as (volume, kubelet's error):
    a configMap or secret volume, or a projected volume's configMap or
    secret source, whose object does not exist and that is not
    ``optional`` (pkg/volume/configmap and pkg/volume/secret, SetUpAt;
    pkg/volume/projected). A claim that does not exist never gets here:
    the scheduler's VolumeBinding plugin leaves such a pod unschedulable."""
    namespace, out = pod["metadata"]["namespace"], list[tuple[str, str]]()
    for volume, kind, ref in volume_refs(pod):
        if ref.get("optional") or volume in dict(out):
            continue
        resource = CONFIGMAPS if kind == "configmap" else SECRETS
        key = "name" if kind == "configmap" else "secretName"
        object_name = str(ref.get(key) or ref.get("name") or "")
        try:
            client.get(resource, object_name, namespace)
        except NotFound:
            out.append((volume, f'{kind} "{object_name}" not found'))
    return out


class Kubelet:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _bound(self, namespace: str, name: str) -> dict[str, Any]:
        """The pod once a scheduler has bound it (a kubelet sees no other)."""
        deadline = time.monotonic() + BIND_TIMEOUT
        while True:
            pod = self.client.get(PODS, name, namespace)
            if pod["spec"].get("nodeName"):
                return pod
            if time.monotonic() > deadline:
                raise AssertionError(f"pod {namespace}/{name} was never bound to a node")
            time.sleep(0.1)

    def _host_ip(self, node: str) -> str:
        """The node's InternalIP (the local cluster's KWOK nodes all report
        127.0.0.1, where KWOK serves their kubelet endpoint), else
        :func:`node_ip`."""
        addresses = (self.client.get(NODES, node).get("status") or {}).get("addresses") or []
        found = [str(a["address"]) for a in addresses if a.get("type") == "InternalIP"]
        return found[0] if found else node_ip(node)

    def _write(
        self,
        pod: dict[str, Any],
        phase: str,
        containers: list[dict[str, Any]],
        init_containers: list[dict[str, Any]],
        *,
        ready: bool,
        reason: str | None = None,
        message: str | None = None,
        extra: tuple[dict[str, Any], ...] = (),
        sandbox: bool = True,
    ) -> dict[str, Any]:
        """Write the pod's status. A pod whose containers wait (Pending) is
        not ready for ``ContainersNotReady``, one whose containers ended for
        ``PodCompleted``; one without a ``sandbox`` yet (its volumes not
        mounted) has no IP and PodReadyToStartContainers False
        (generateAPIPodStatus)."""
        meta = pod["metadata"]
        status = pod_status(
            pod,
            self._host_ip(pod["spec"]["nodeName"]),
            phase,
            containers,
            init_containers,
            ready=ready,
            reason=reason,
            message=message,
            extra=extra,
            sandbox=sandbox,
        )
        return self.client.patch(
            PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status"
        )

    def run(self, namespace: str, name: str, *, restart_count: int = 0) -> dict[str, Any]:
        """Every container running (native sidecars too), once the pod is bound."""
        pod = self._bound(namespace, name)
        started = (pod.get("status") or {}).get("startTime") or now()
        containers = [
            running_container(c, started, restart_count) for c in pod["spec"]["containers"]
        ]
        inits = init_statuses(pod, started, sidecars_run=True)
        return self._write(pod, "Running", containers, inits, ready=True)

    def terminate(
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int = 0,
        container: str | None = None,
        restart_count: int = 0,
        reason: str | None = None,
        pod_reason: str | None = None,
        message: str | None = None,
        running: Iterable[str] = (),
    ) -> dict[str, Any]:
        """End ``container`` (default: the pod's default container, as
        ``kubectl.kubernetes.io/default-container`` names it, which the operator
        sets to the training container; else the spec's first) with ``exit_code``; the
        other regular containers exit 0, except those named in ``running``
        (sidecars), which go on running and keep the pod Running. Native
        sidecars stop once no regular container runs."""
        pod = self._bound(namespace, name)
        started = (pod.get("status") or {}).get("startTime") or now()
        statuses = exited(
            pod,
            container or default_container(pod),
            exit_code,
            started,
            keep=set(running),
            reason=reason,
            message=message,
            restart_count=restart_count,
        )
        phase = phase_of(statuses)
        inits = init_statuses(pod, started, sidecars_run=phase == "Running")
        return self._write(
            pod,
            phase,
            statuses,
            inits,
            ready=False,
            reason=pod_reason,
            message=message if pod_reason else None,
        )

    def succeed(self, namespace: str, name: str, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=0, **kw)

    def fail(self, namespace: str, name: str, exit_code: int = 1, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=exit_code, **kw)

    def evict(self, namespace: str, name: str) -> dict[str, Any]:
        """Failed without an exit code of the training's own, as when the node
        evicts the pod under resource pressure: every container killed (137),
        the pod's reason ``Evicted``, and first the condition
        ``DisruptionTarget`` (reason ``TerminationByKubelet``) that kubelet's
        eviction manager adds with the same message
        (pkg/kubelet/eviction/eviction_manager.go, evictPod)."""
        pod = self._bound(namespace, name)
        message = (
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi."
        )
        started = (pod.get("status") or {}).get("startTime") or now()
        statuses = [ended(c, 137, started, reason="Error") for c in pod["spec"]["containers"]]
        inits = init_statuses(pod, started, sidecars_run=False)
        return self._write(
            pod,
            "Failed",
            statuses,
            inits,
            ready=False,
            reason="Evicted",
            message=message,
            extra=(disruption(message),),
        )

    def oom_kill(
        self, namespace: str, name: str, *, container: str | None = None, restart_count: int = 0
    ) -> dict[str, Any]:
        """End ``container`` (default as :meth:`terminate`) as the kernel's OOM
        killer does: SIGKILL, so exit code 137, and the reason ``OOMKilled``
        that the runtime reports and kubelet copies into
        ``state.terminated.reason``
        (pkg/kubelet/kuberuntime/kuberuntime_container.go,
        convertToKubeContainerStatus)."""
        return self.terminate(
            namespace,
            name,
            exit_code=137,
            container=container,
            reason="OOMKilled",
            restart_count=restart_count,
        )

    # -- containers that cannot start ----------------------------------------

    def event(self, pod: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """An Event on ``pod`` from its node's kubelet, as kubelet's recorder
        sends one (source component ``kubelet``, host the node)."""
        self.client.create(EVENTS, event(pod, type_, reason, message), pod["metadata"]["namespace"])

    def _wait(
        self, pod: dict[str, Any], reasons: dict[str, tuple[str, str]], *, sandbox: bool = True
    ) -> dict[str, Any]:
        """Write ``pod`` Pending with each container waiting: those in
        ``reasons`` with that (reason, message), the others
        ``ContainerCreating`` (kubelet's default waiting state,
        kubelet_pods.go, convertToAPIContainerStatuses). Without a
        ``sandbox`` (its volumes not mounted yet) the pod has no IP and its
        PodReadyToStartContainers condition is False. The pod is taken to have
        no init containers left to run (the tests' pods have none)."""
        statuses = [
            waiting(c, *reasons.get(c["name"], ("ContainerCreating", "")))
            for c in pod["spec"]["containers"]
        ]
        return self._write(pod, "Pending", statuses, [], ready=False, sandbox=sandbox)

    def pull_fails(
        self, namespace: str, name: str, error: str, *, container: str | None = None
    ) -> dict[str, Any]:
        """A pull of ``container``'s image (default: the training container)
        fails with ``error``: it waits ``ErrImagePull`` with the error as its
        message, and kubelet records the Events Pulling, Failed ("Failed to
        pull image ...") and Failed ("Error: ErrImagePull")
        (pkg/kubelet/images/image_manager.go, EnsureImageExists;
        pkg/kubelet/kuberuntime/kuberuntime_container.go, startContainer).
        Kubelet then backs off that image for 10s, doubling up to 300s
        (pkg/kubelet/kubelet.go, imageBackOffPeriod, MaxImageBackOff); a test
        calls :meth:`pull_backs_off` for a sync within it and this again for
        the next pull."""
        pod = self._bound(namespace, name)
        target = container or default_container(pod)
        image = image_of(pod, target)
        written = self._wait(pod, {target: ("ErrImagePull", error)})
        self.event(pod, "Normal", "Pulling", f'Pulling image "{image}"')
        self.event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {error}')
        self.event(pod, "Warning", "Failed", "Error: ErrImagePull")
        return written

    def pull_backs_off(
        self, namespace: str, name: str, *, container: str | None = None
    ) -> dict[str, Any]:
        """A sync within the image's back-off: kubelet does not pull; the
        container waits ``ImagePullBackOff`` ("Back-off pulling image <image>")
        and kubelet records the Events BackOff and Failed ("Error:
        ImagePullBackOff") (same sources as :meth:`pull_fails`)."""
        pod = self._bound(namespace, name)
        target = container or default_container(pod)
        image = image_of(pod, target)
        back_off = f'Back-off pulling image "{image}"'
        written = self._wait(pod, {target: ("ImagePullBackOff", back_off)})
        self.event(pod, "Normal", "BackOff", back_off)
        self.event(pod, "Warning", "Failed", "Error: ImagePullBackOff")
        return written

    def start(self, namespace: str, name: str) -> bool:
        """Kubelet's sync of a placed pod: mount its volumes, then run its
        containers (:meth:`run`). A volume that cannot mount
        (:func:`missing_volumes`) stops it there, as the volume manager does
        (pkg/kubelet/volumemanager, WaitForAttachAndMount; the Event from
        pkg/volume/util/operationexecutor/operation_generator.go,
        GenerateMountVolumeFunc): the pod stays Pending without a sandbox,
        its containers waiting ``ContainerCreating``, and a Warning Event
        FailedMount on the pod says ``MountVolume.SetUp failed for volume
        "<volume>" : <error>`` for each. (After two minutes kubelet adds one
        more, "Unable to attach or mount volumes: unmounted volumes=[...]
        ...: timed out waiting for the condition", and keeps trying.)
        Whether the containers run."""
        pod = self._bound(namespace, name)
        failed = missing_volumes(self.client, pod)
        if not failed:
            self.run(namespace, name)
            return True
        self._wait(pod, {}, sandbox=False)
        for volume, error in failed:
            self.event(
                pod,
                "Warning",
                "FailedMount",
                f'MountVolume.SetUp failed for volume "{volume}" : {error}',
            )
        return False
