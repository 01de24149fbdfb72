"""How many GPUs a pod asks for, counted as the scheduler counts them.

Read by every kind's ``gpus`` (what its pods ask for, as its builders build
them) and by what the t9k command shows of pods already placed (``t9k top``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GPU = "nvidia.com/gpu"
"""The extended resource a pod asks GPUs by."""


def container_gpus(container: Mapping[str, Any]) -> int:
    """A container's GPUs: its limit, else its request (0 when unreadable)."""
    resources = container.get("resources") or {}
    for where in ("limits", "requests"):
        value = (resources.get(where) or {}).get(GPU)
        if value is not None:
            try:
                return int(str(value))
            except ValueError:
                return 0
    return 0


def pod_gpus(template_or_pod: Mapping[str, Any]) -> int:
    """GPUs a pod (or pod template) asks for: its containers' sum, or its
    largest init container's when that is more (as the scheduler counts)."""
    spec = template_or_pod.get("spec") or {}
    containers = sum(container_gpus(c) for c in spec.get("containers") or [])
    init = max((container_gpus(c) for c in spec.get("initContainers") or []), default=0)
    return max(containers, init)
