"""The sizes and scenarios a run of the bench takes, and their defaults."""

from __future__ import annotations

from .integrations import Integrations

SCENARIOS = ("ceiling", "writes", "defaults", "tuned", "baseline", "kubeflow")
# Kubeflow's training-operator (kubeflow.py) runs when named: its first run builds it.
ON_REQUEST = ("kubeflow",)
OURS = tuple(s for s in SCENARIOS if s not in ON_REQUEST)
OPERATOR_SCENARIOS = ("defaults", "tuned")  # this tree's operator: --kueue and --gang apply
TUNED = ("--kube-api-qps", "1000", "--kube-api-burst", "2000")
# Sizes and the scenarios each gets by default (1x512: one job of 512
# replicas). Behind a client limit 4,000 pods take minutes (7,000 writes at
# 50 QPS: 140 s; a08a3ab at 20 QPS: 400 s),
# so 1000x4 compares the operator with the ceiling and the floor only
# (``--sizes 1000x4 --scenarios baseline`` runs the rest); 10000x4 runs the
# operator at its defaults alone: its memory and CPU per job at scale.
DEFAULT_PLAN = {
    "200x4": OURS,
    "1x512": OURS,
    "1000x4": ("ceiling", "writes", "defaults", "tuned"),
    "10000x4": ("defaults",),
}
DEFAULT_TIMEOUT = 600.0
WAIT_PER_POD = 0.06
"""Seconds a wait may take per pod of the run when that is longer than
``--timeout``'s default (10000x4: 40 minutes)."""


def scenario_plan(
    sizes: list[str], chosen: list[str] | None, using: Integrations
) -> dict[str, tuple[str, ...]]:
    """Each size's scenarios: ``chosen`` for every size, else its default
    (:data:`DEFAULT_PLAN`). With ``--kueue`` or ``--gang`` only the operator's
    scenarios: the default plan keeps those, and ``chosen`` may name no other
    (ValueError, saying which)."""
    for s in chosen or ():
        if s not in SCENARIOS:
            raise ValueError(f"unknown scenario {s!r}")
    if chosen is not None and using.on:
        others = [s for s in chosen if s not in OPERATOR_SCENARIOS]
        if others:
            raise ValueError(
                f"{using} runs only with this tree's operator (scenarios "
                f"{', '.join(OPERATOR_SCENARIOS)}), not {', '.join(others)}"
            )
    out = {}
    for size in sizes:
        plan = tuple(chosen) if chosen is not None else DEFAULT_PLAN.get(size, OURS)
        out[size] = tuple(s for s in plan if s in OPERATOR_SCENARIOS) if using.on else plan
    return out


def run_timeout(timeout: float | None, pods: int) -> float:
    """``--timeout``, else the default or :data:`WAIT_PER_POD` a pod if longer."""
    return max(DEFAULT_TIMEOUT, WAIT_PER_POD * pods) if timeout is None else timeout
