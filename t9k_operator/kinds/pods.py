"""Reading a pod the way the engine needs it: one :class:`ReplicaState`.

Pure: a pod dict in, a small frozen value out. A replica is its training
container: the container the builders launched the training in, found by name
in the pod's spec with the rule the builders use
(:func:`~t9k_operator.objects.training_container_index`: the kind's
conventional name, else the first container), then by that name in the status.
Kubelet lists ``containerStatuses`` sorted by name, not in the spec's order
(pkg/kubelet/kubelet_pods.go, ``convertToAPIContainerStatuses``), so a
position in that list says nothing.

The training container's exit code decides restarts (``ExitCode`` policy) and
failure messages. Once it has terminated the replica has ended, whatever else
runs in the pod: kubelet keeps a pod ``Running`` while any regular container
runs (``getPhase`` in the same file), so a log shipper or mesh proxy beside
the training would otherwise hold the replica, and the job, open for ever.
Native sidecars (init containers with ``restartPolicy: Always``) are never the
training container. A pod that is Failed without a training exit code
(evicted, node lost) still counts as failed.

A container the operator added that runs the user's image (the ssh set-up
init container) is described by that image and where in the job it comes
from, so its failure says what the user must fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t9k_operator import objects
from t9k_operator.builders.ssh import IMAGE_FROM, SETUP_CONTAINER
from t9k_operator.objects import Obj

# Exit codes that ``restartPolicy: ExitCode`` treats as transient (seed 001).
RESTARTABLE_EXIT_CODES = frozenset({130, 137, 138, 143})

# The reasons kubelet gives a container that waits as it should: its sandbox,
# volumes and image being made ready, or an init container still to finish
# (pkg/kubelet/kubelet_pods.go). Any other reason of a waiting container is
# kubelet's word on why it cannot start: ErrImagePull, ImagePullBackOff,
# InvalidImageName, ErrImageNeverPull (pkg/kubelet/images/types.go),
# CreateContainerConfigError, CreateContainerError, the hook errors
# (pkg/kubelet/kuberuntime), RunContainerError, CreatePodSandboxError
# (pkg/kubelet/container/sync_result.go).
STARTING_REASONS = frozenset({"", "ContainerCreating", "PodInitializing"})

# Reasons kubelet alternates for one cause, as long as it lasts: a pull that
# fails (ErrImagePull, with the pull's error) and the back-off before the next
# (ImagePullBackOff) (pkg/kubelet/images/image_manager.go, EnsureImageExists).
_SAME_CAUSE = {"ErrImagePull": "ImagePullBackOff"}


def same_cause(reason: str, other: str) -> bool:
    """Whether two waiting reasons of kubelet's name one cause."""
    return _SAME_CAUSE.get(reason, reason) == _SAME_CAUSE.get(other, other)


# Reasons no wait cures: the image reference cannot be parsed, or the pod may
# not pull an image the node does not have. The user must change the pod.
PERMANENT_REASONS = frozenset({"InvalidImageName", "ErrImageNeverPull"})

# How kubelet says that an env var's ConfigMap or Secret lacks the key it
# names (pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables): the object
# exists, so no wait cures it. A missing object ("... not found") may yet be
# created.
MISSING_KEY = "couldn't find key"


# Why a pod was disrupted: the reason of its DisruptionTarget condition, which
# the component that ends it writes first (PreemptionByScheduler,
# DeletionByTaintManager, EvictionByEvictionAPI, DeletionByPodGC,
# TerminationByKubelet: k8s.io/api/core/v1, "pod disruption conditions"), or
# for a kubelet that writes none, the pod's own reason when its node evicted
# (Evicted) or preempted (Preempting) it.
DISRUPTED_POD_REASONS = frozenset({"Evicted", "Preempting"})

# The containers the operator adds that run the user's image: what each is,
# and what the image must provide for it.
ADDED_CONTAINERS = {
    SETUP_CONTAINER: (
        "the ssh set-up container",
        "the image must provide /bin/sh (and /bin/bash for DeepSpeed and the ColossalAI "
        "launcher), and the ssh directory must be below directories that only root or the "
        'container\'s user may write (docs/kinds.md, "The ssh key in a pod")',
    ),
}


def _added(pod: Obj, name: str) -> str:
    """How a message names the added container ``name`` of ``pod`` (one of
    :data:`ADDED_CONTAINERS`): by what it is, its image and where in the job
    that comes from."""
    spec = pod.get("spec") or {}
    found = [c for c in spec.get("initContainers") or [] if c.get("name") == name]
    container = found[0] if found else {}
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    where = f", from {env[IMAGE_FROM]}" if env.get(IMAGE_FROM) else ""
    return f"{ADDED_CONTAINERS[name][0]} {name} (image {container.get('image')}{where})"


@dataclass(frozen=True)
class Waiting:
    """A container of a placed pod that kubelet cannot start, and why."""

    container: str
    reason: str
    message: str = ""
    named: str = ""  # how messages name the container ("": "container <name>")

    @property
    def permanent(self) -> bool:
        return self.reason in PERMANENT_REASONS or (
            self.reason == "CreateContainerConfigError" and MISSING_KEY in self.message
        )

    def describe(self) -> str:
        return f"{self.named or 'container ' + self.container}: {self.reason}" + (
            f": {self.message}" if self.message else ""
        )


@dataclass(frozen=True)
class ReplicaState:
    name: str
    uid: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    terminating: bool = False
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    containers: tuple[tuple[str, str, int | None, str], ...] = ()  # name, state, code, reason
    unschedulable: str = ""  # the scheduler's message while it cannot place the pod
    # The pod's own phase, when it differs from the replica's: a training
    # container that has ended in a pod that other containers keep Running.
    pod_phase: str = ""
    node: str = ""  # the node the pod is placed on ("" until then)
    placed_at: str = ""  # when the scheduler placed it (its PodScheduled condition)
    waiting: Waiting | None = None  # a container kubelet cannot start (init containers first)
    started: bool = False  # the training container has run (or is running)
    disruption: str = ""  # why the pod was disrupted ("" when it was not): a reason
    disruption_message: str = ""
    # Why nobody knows whether the pod runs: its node is not Ready or is gone
    # (:func:`node_trouble`), or the pod's phase is Unknown. "" otherwise.
    lost: str = ""
    # Why the pod is about to be evicted: its node is cordoned
    # (:func:`node_draining`). "" otherwise.
    draining: str = ""
    # An added container of the user's image that failed (ADDED_CONTAINERS):
    # what it is, how it ended, and what the image must provide. "" otherwise.
    added_failure: str = ""

    @property
    def ended(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def describe_failure(self) -> str:
        if self.added_failure:
            return f"pod {self.name} failed: {self.added_failure}"
        parts = [f"pod {self.name} failed"]
        if self.exit_code is not None:
            parts.append(f"with exit code {self.exit_code}")
        if self.reason:
            parts.append(f"({self.reason}{': ' + self.message if self.message else ''})")
        return " ".join(parts)


def _container_view(status: Obj) -> tuple[str, str, int | None, str]:
    state = status.get("state") or {}
    if "terminated" in state:
        term = state["terminated"] or {}
        return (
            status.get("name", ""),
            "Terminated",
            term.get("exitCode"),
            str(term.get("reason") or ""),
        )
    if "running" in state:
        return (status.get("name", ""), "Running", None, "")
    waiting = state.get("waiting") or {}
    return (status.get("name", ""), "Waiting", None, str(waiting.get("reason") or ""))


def training_container(pod: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The name of the pod's training container: ``names`` (the kind's
    conventional ones) in that order, else the pod's first container, as the
    builders chose it. None for a pod without containers."""
    container = objects.training_container(pod, names)
    name = None if container is None else container.get("name")
    return None if name is None else str(name)


def replica_state(pod: Obj, training_names: Sequence[str] = ()) -> ReplicaState:
    """Summarize ``pod``, whose training container is found with
    ``training_names`` (:func:`training_container`)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    views = tuple(_container_view(s) for s in statuses)
    wanted = training_container(pod, training_names)
    chosen = next((s for s in statuses if s.get("name") == wanted), None)
    phase, pod_phase, exit_code, reason, message = _training_end(status, chosen)
    disruption, disruption_message = _disruption(status, message)
    unschedulable, placed_at = _placement(status)
    state = (chosen or {}).get("state") or {}
    last = (chosen or {}).get("lastState") or {}
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    return ReplicaState(
        lost=f"node {node or '(none)'} has stopped reporting the pod (phase Unknown)"
        if phase == "Unknown"
        else "",
        node=node,
        placed_at=placed_at,
        waiting=_waiting(pod),
        added_failure=_added_failure(pod),
        started=any(k in s for s in (state, last) for k in ("running", "terminated")),
        disruption=disruption,
        disruption_message=disruption_message,
        unschedulable=unschedulable,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        phase=phase,
        terminating=bool(meta.get("deletionTimestamp")),
        exit_code=exit_code,
        reason=reason,
        message=message,
        containers=views,
        pod_phase=pod_phase,
    )


def _training_end(status: Obj, chosen: Obj | None) -> tuple[str, str, int | None, str, str]:
    """The replica's phase, the pod's own phase when that differs ("" when it
    does not), and the exit code, reason and message of the replica: the pod's
    reason and message, else those of its training container ``chosen`` once
    that has terminated."""
    phase = str(status.get("phase") or "Pending")
    pod_phase = ""
    exit_code = None
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    term = None if chosen is None else (chosen.get("state") or {}).get("terminated")
    if term:
        exit_code = term.get("exitCode")
        reason = reason or str(term.get("reason") or "")
        message = message or str(term.get("message") or "")
        ended = "Succeeded" if exit_code == 0 else "Failed"
        # Ended, though sidecars may keep the pod going (the pod has
        # restartPolicy Never, so the container never runs again); or a
        # sidecar's failure failed a pod whose training succeeded. A pod
        # the node failed (a reason of its own: Evicted) stays failed.
        if phase not in ("Succeeded", "Failed") or (
            phase == "Failed" and ended == "Succeeded" and not status.get("reason")
        ):
            pod_phase, phase = phase, ended
    return phase, pod_phase, exit_code, reason, message


def _disruption(status: Obj, message: str) -> tuple[str, str]:
    """Why the pod was disrupted and how ("", "" when it was not): its
    DisruptionTarget condition, else its own reason (with ``message``) when
    that is one of :data:`DISRUPTED_POD_REASONS`."""
    disruption = disruption_message = ""
    if status.get("reason") in DISRUPTED_POD_REASONS:
        disruption, disruption_message = str(status["reason"]), message
    for cond in status.get("conditions") or []:
        if (cond.get("type"), cond.get("status")) == ("DisruptionTarget", "True"):
            disruption = str(cond.get("reason") or "DisruptionTarget")
            disruption_message = str(cond.get("message") or "")
    return disruption, disruption_message


def _placement(status: Obj) -> tuple[str, str]:
    """From the pod's PodScheduled condition: the scheduler's message while it
    cannot place the pod, and when it placed it ("" for either otherwise)."""
    unschedulable = placed_at = ""
    for cond in status.get("conditions") or []:
        if (cond.get("type"), cond.get("status"), cond.get("reason")) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        ):
            unschedulable = str(cond.get("message") or "no node fits")
        if (cond.get("type"), cond.get("status")) == ("PodScheduled", "True"):
            placed_at = str(cond.get("lastTransitionTime") or "")
    return unschedulable, placed_at


def node_trouble(name: str, node: Obj | None) -> str:
    """Why the pods on node ``name`` (``node``: the Node object, None when
    there is none) may no longer run as their status says: "" when the node
    is Ready, or has not reported yet (a node that just registered). Kubelet
    posts the Ready condition; the node lifecycle controller turns it
    Unknown once kubelet stops renewing its lease (NodeStatusUnknown), and a
    kubelet itself sets it False when its runtime or network fails."""
    if node is None:
        return f"node {name} is gone"
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") != "Ready":
            continue
        if cond.get("status") == "True":
            return ""
        why = str(cond.get("reason") or cond.get("status") or "")
        message = str(cond.get("message") or "")
        return f"node {name} is not ready ({why}{': ' + message if message else ''})"
    return ""


def node_draining(name: str, node: Obj | None) -> str:
    """Why the pods on node ``name`` are about to be evicted: "" unless the
    node is cordoned (``spec.unschedulable``). Cordoning is how a drain
    starts: ``kubectl drain`` marks the node unschedulable, then evicts its
    pods through the Eviction API (k8s.io/kubectl/pkg/drain: cordon.go's
    ``CordonHelper`` sets ``spec.unschedulable``, drain.go's
    ``DeleteOrEvictPods`` posts a policy/v1 Eviction per pod, and
    default.go's ``RunNodeDrain`` expects the node cordoned first).
    Kubernetes has no standard taint for a coming maintenance (the
    ``node.kubernetes.io/unschedulable`` taint the node controller adds
    mirrors the cordon), so a cordon is the one sign read."""
    if node is None or not (node.get("spec") or {}).get("unschedulable"):
        return ""
    return f"node {name} is cordoned"


def _added_failure(pod: Obj) -> str:
    """What an added container of the user's image that has failed
    (:data:`ADDED_CONTAINERS`) says, and what the image must provide; "" when
    none has."""
    for c in (pod.get("status") or {}).get("initContainerStatuses") or []:
        name = str(c.get("name", ""))
        term = (c.get("state") or {}).get("terminated") or {}
        if name not in ADDED_CONTAINERS or term.get("exitCode") in (None, 0):
            continue
        # Its log's last line (the set-up says why it stops there), kept short.
        lines = str(term.get("message") or "").strip().splitlines()
        message = lines[-1].strip()[:300] if lines else ""
        why = f": {message}" if message else f" ({term['reason']})" if term.get("reason") else ""
        return (
            f"{_added(pod, name)} failed with exit code {term['exitCode']}{why}; "
            f"{ADDED_CONTAINERS[name][1]}"
        )
    return ""


def _waiting(pod: Obj) -> Waiting | None:
    """The first container (init containers first, as kubelet starts them)
    that waits for a reason other than starting as it should."""
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or []:
            waiting = (c.get("state") or {}).get("waiting")
            if waiting is None:
                continue
            reason = str(waiting.get("reason") or "")
            if reason not in STARTING_REASONS:
                name = str(c.get("name", ""))
                named = _added(pod, name) if name in ADDED_CONTAINERS else ""
                return Waiting(name, reason, str(waiting.get("message") or ""), named)
    return None


def should_restart(policy: str, state: ReplicaState) -> bool:
    """Whether an ended replica is recreated under its restart policy."""
    if policy == "Always":
        return state.ended
    if state.phase != "Failed":
        return False
    if policy == "OnFailure":
        return True
    if policy == "ExitCode":
        return state.exit_code in RESTARTABLE_EXIT_CODES
    return False
