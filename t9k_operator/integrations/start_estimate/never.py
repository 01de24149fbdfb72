"""A job that never starts as it is: what it asks is more than the cluster
(or its ClusterQueue) has, even with nothing else running.

Pure, on plain numbers (:data:`~.arithmetic.Amounts`). Two questions, each
answered by the sentence a status carries (None: it may fit):

* **Nodes** (the default scheduler, a gang scheduler): :func:`never_fits`
  compares the requests of all of a job's pods, at once, with the nodes'
  allocatable. It never fits when a pod asks more of a resource than any node
  has, when the pods ask more in all than the nodes have together, or when
  the nodes could hold fewer of its pods than it has even were each pod as
  small as its smallest. Only resources are counted: node selectors, taints
  and affinity are not, and a job that passes may still never fit.
* **Quota** (Kueue): :func:`quota_never_fits` compares what its Workload
  asks with its ClusterQueue's nominal quota, its flavors summed. A
  ClusterQueue in a cohort may borrow beyond its own quota: the caller asks
  only of one that is in none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from t9k_operator.integrations.start_estimate.arithmetic import EPSILON, Amounts, show

NEVER = "never fits"
"""How the sentence starts."""


def _asks(total: float, resource: str, asks: Sequence[float]) -> str:
    """``asks 128 nvidia.com/gpu in pods of 64`` (``in one pod``, ``in pods of
    up to 64`` when their asks differ)."""
    largest, smallest = max(asks), min(asks)
    if len(asks) == 1:
        sizes = "in one pod"
    elif largest - smallest < EPSILON:
        sizes = f"in pods of {show(largest)}"
    else:
        sizes = f"in pods of up to {show(largest)}"
    return f"{NEVER}: asks {show(total)} {resource} {sizes}"


def never_fits(pods: Sequence[Amounts], allocatable: Mapping[str, Amounts]) -> str | None:
    """Why the ``pods`` of a job (their requests, all of them at once) cannot be
    placed on nodes of ``allocatable`` (by node) even when the nodes are empty;
    None when, as far as resources tell, they can."""
    for r in sorted({r for p in pods for r, v in p.items() if v > EPSILON}):
        asks = [p[r] for p in pods if p.get(r, 0.0) > EPSILON]
        head = _asks(sum(asks), r, asks)
        have = [max(a.get(r, 0.0), 0.0) for a in allocatable.values()]
        largest = max(have, default=0.0)
        if largest <= EPSILON:
            return f"{head}; no node has {r}"
        if max(asks) > largest + EPSILON:
            return f"{head}; the largest node has {show(largest)}"
        if sum(asks) > sum(have) + EPSILON:
            return f"{head}; the nodes have {show(sum(have))} in all"
        smallest = min(asks)
        room = sum(math.floor((h + EPSILON) / smallest) for h in have)
        if room < len(asks):
            held = f"{room} pod{'' if room == 1 else 's'}"
            return f"{head}; the nodes hold at most {held} of {show(smallest)}"
    return None


def quota_never_fits(needs: Amounts, quota: Amounts, cluster_queue: str) -> str | None:
    """Why a Workload that ``needs`` this much quota is never admitted by a
    ClusterQueue of nominal ``quota`` (its flavors summed; only the resources it
    has a quota for: Kueue charges only those); None when it may be."""
    for r in sorted(needs):
        if r in quota and needs[r] > quota[r] + EPSILON:
            return (
                f"{NEVER}: asks {show(needs[r])} {r}; the ClusterQueue {cluster_queue} "
                f"has a nominal quota of {show(quota[r])}"
            )
    return None
