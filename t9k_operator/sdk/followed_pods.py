"""The pods a followed log reads (:mod:`t9k_operator.sdk.logs`): whether one has
started or is over, and closing its log stream once it is over, since a stream
may outlive its pod (a node that stopped answering; KWOK's simulated kubelets
never end one)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from t9k_operator import kube
from t9k_operator.sdk.errors import T9kError


def started(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's containers have run, so it has a log to read."""
    return (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")


def ended(pod: Mapping[str, Any] | None, uid: Any) -> bool:
    """Whether the pod followed is over: gone, replaced, or its containers ended."""
    if pod is None or pod["metadata"].get("uid") != uid:
        return True
    if pod["metadata"].get("deletionTimestamp"):
        return True
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def close_when_over(
    stream: kube.LogStream,
    current: Callable[[], Mapping[str, Any] | None],
    uid: str,
    poll: float,
    stop: threading.Event,
) -> None:
    """Close a followed log once its pod (``current()``, the replica's pod now)
    is over (ended, deleted or replaced) for a poll interval more, or the reader
    stopped: a kubelet ends the stream itself when the container exits, but a
    stream may outlive its pod (a node that stopped answering, KWOK's simulated
    kubelets)."""
    over = False
    while not stream.closed:
        if stop.wait(poll):
            break
        try:
            is_over = ended(current(), uid)
        except T9kError:
            continue
        if is_over and over:
            break
        over = is_over
    stream.close()
