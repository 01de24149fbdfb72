"""When a waiting job may start: the arithmetic, on plain numbers.

Pure and clock-free (``now`` is a parameter). Two questions, one shape of
answer (:class:`Estimate`: a time, or None with the reason, and the jobs
whose end it waits for):

* **Quota** (Kueue): a job waits in its ClusterQueue behind the workloads
  ahead of it. :func:`quota_estimate` frees the quota the admitted workloads
  hold in the order of their ends (their jobs' progress ETAs) until what the
  job and those ahead of it need fits in what is free: the job starts when the
  last of those holders ends. It assumes Kueue admits in queue order (its
  StrictFIFO and BestEffortFIFO strategies order by priority, then creation)
  without borrowing from a cohort, and that each holder ends at its ETA.
* **Room on nodes** (the default scheduler, a gang scheduler): a job's pods
  wait to be placed. :func:`lacking` says which resource no node has enough
  of; :func:`room_estimate` frees the pods of running jobs, in the order of
  their ends, until the waiting pods fit (first fit, largest first). Only
  resources are counted: node selectors, taints and affinity are not.

A holder whose end is unknown (a job that reports no ETA, a workload this
operator does not run) ends the search: the estimate is then None and says
which holder it could not see past.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

Amounts = Mapping[str, float]
"""Quantities by resource name (cpu in cores, memory in bytes, GPUs in devices)."""
EPSILON = 1e-9

_SUFFIXES = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def quantity(value: object) -> float:
    """A Kubernetes resource quantity (``500m``, ``2Gi``, ``8``) as a number; 0
    for what is not one."""
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    found = _QUANTITY.match(str(value).strip())
    if found is None or found.group(2) not in _SUFFIXES:
        return 0.0
    try:
        return float(found.group(1)) * _SUFFIXES[found.group(2)]
    except ValueError:
        return 0.0


def amounts(values: Mapping[str, object]) -> dict[str, float]:
    """A ``requests`` / ``allocatable`` / quota map as numbers."""
    return {str(k): quantity(v) for k, v in values.items()}


def add(*many: Amounts) -> dict[str, float]:
    out: dict[str, float] = {}
    for one in many:
        for k, v in one.items():
            out[k] = out.get(k, 0.0) + v
    return out


def minus(a: Amounts, b: Amounts) -> dict[str, float]:
    return {k: v - b.get(k, 0.0) for k, v in a.items()}


def short(need: Amounts, have: Amounts) -> dict[str, float]:
    """What of ``need`` ``have`` lacks, by resource (none: it fits)."""
    return {r: v - have.get(r, 0.0) for r, v in need.items() if v > have.get(r, 0.0) + EPSILON}


def show(value: float) -> str:
    """A quantity as a person reads it: whole numbers plain, else two decimals;
    byte counts in Gi."""
    if value >= 2**30:
        return f"{value / 2**30:.4g}Gi"
    if abs(value - round(value)) < EPSILON:
        return str(round(value))
    return f"{value:.2f}"


@dataclass(frozen=True)
class Holder:
    """Resources held by something that frees them when it ends."""

    name: str  # how the estimate names it: "team-a/train", or a description
    holds: Amounts
    ends: datetime | None  # None: unknown
    node: str = ""  # where it holds them (room on nodes), "" for quota


@dataclass(frozen=True)
class Estimate:
    """When a job may start: ``at`` (None: unknown), why, and the holders whose
    end it waits for, in the order they end."""

    at: datetime | None
    reason: str
    waiting_for: tuple[str, ...] = ()


def _by_end(holders: Iterable[Holder]) -> list[Holder]:
    return sorted(holders, key=lambda h: (h.ends is None, h.ends or datetime.max, h.name))


def _unknown_end(h: Holder, waiting: list[str]) -> Estimate:
    return Estimate(
        None,
        f"it waits for {h.name}, whose end is unknown (it reports no progress ETA)",
        (*waiting, h.name),
    )


def quota_estimate(
    needed: Amounts, free: Amounts, holders: Sequence[Holder], now: datetime
) -> Estimate:
    """When ``needed`` (the job's quota and that of the workloads ahead of it)
    fits in the ClusterQueue's ``free`` quota, as ``holders`` end."""
    lack = short(needed, free)
    if not lack:
        return Estimate(now, "the quota it needs is free: Kueue admits it at its next pass")
    have = dict(free)
    waiting: list[str] = []
    for h in _by_end(holders):
        if not any(h.holds.get(r, 0.0) > EPSILON for r in lack):
            continue  # frees nothing that is short
        if h.ends is None:
            return _unknown_end(h, waiting)
        waiting.append(h.name)
        have = add(have, h.holds)
        if not short(needed, have):
            at = max(h.ends, now)
            return Estimate(at, f"the quota it needs is free once {h.name} ends", tuple(waiting))
    missing = short(needed, have)
    words = ", ".join(f"{show(v)} {r}" for r, v in sorted(missing.items()))
    return Estimate(
        None,
        f"even with every admitted workload ended, the ClusterQueue lacks {words} "
        "for it and the workloads ahead of it",
        tuple(waiting),
    )


@dataclass(frozen=True)
class Lack:
    """A resource the waiting pods ask for that no node has room for."""

    resource: str
    requested: float  # per pod, the most any waiting pod asks
    pods: int  # waiting pods that ask for it
    most_free: float  # the most any node has free
    nodes: tuple[str, ...] = field(default_factory=tuple)  # the nodes with the most free


def lacking(pods: Sequence[Amounts], free: Mapping[str, Amounts]) -> list[Lack]:
    """The resources that keep ``pods`` from fitting on the nodes' ``free``
    room: those for which the nodes have room for fewer of the pods than ask."""
    out = []
    for r in sorted({r for p in pods for r, v in p.items() if v > EPSILON}):
        asks = sorted((p[r] for p in pods if p.get(r, 0.0) > EPSILON), reverse=True)
        room = sum(math.floor((f.get(r, 0.0) + EPSILON) / asks[0]) for f in free.values())
        if room >= len(asks):
            continue
        most = max((f.get(r, 0.0) for f in free.values()), default=0.0)
        best = tuple(sorted(n for n, f in free.items() if abs(f.get(r, 0.0) - most) < EPSILON))
        out.append(Lack(r, asks[0], len(asks), max(most, 0.0), best[:5]))
    return out


def fits(pods: Sequence[Amounts], free: Mapping[str, Amounts]) -> bool:
    """Whether ``pods`` fit on the nodes' ``free`` room, placed first fit, the
    largest first (by their largest ask relative to the nodes' most free)."""
    room = {n: dict(f) for n, f in free.items()}
    scale = {
        r: max((f.get(r, 0.0) for f in free.values()), default=0.0) or 1.0 for p in pods for r in p
    }

    def size(p: Amounts) -> float:
        return max((v / scale[r] for r, v in p.items()), default=0.0)

    for pod in sorted(pods, key=size, reverse=True):
        for node in sorted(room):
            if not short(pod, room[node]):
                room[node] = minus(room[node], pod)
                break
        else:
            return False
    return True


def room_estimate(
    pods: Sequence[Amounts],
    free: Mapping[str, Amounts],
    holders: Sequence[Holder],
    now: datetime,
) -> Estimate:
    """When ``pods`` fit on the nodes, their ``free`` room growing as the
    ``holders`` (pods of running jobs, each on its node) end."""
    if fits(pods, free):
        return Estimate(now, "the nodes have room for its pods: the scheduler places them next")
    wanted = {r for p in pods for r, v in p.items() if v > EPSILON}
    room = {n: dict(f) for n, f in free.items()}
    waiting: list[str] = []
    for h in _by_end(holders):
        if h.node not in room or not any(h.holds.get(r, 0.0) > EPSILON for r in wanted):
            continue
        if h.ends is None:
            return _unknown_end(h, waiting)
        if h.name not in waiting:
            waiting.append(h.name)
        room[h.node] = add(room[h.node], h.holds)
        if fits(pods, room):
            at = max(h.ends, now)
            return Estimate(at, f"its pods fit once {h.name} ends", tuple(waiting))
    return Estimate(
        None,
        "its pods do not fit on the nodes even with every running pod ended",
        tuple(waiting),
    )


def bucket(at: datetime | None, now: datetime) -> datetime | None:
    """``at`` rounded to the minute (when it is more than an hour away, to five
    minutes), so that an estimate moving by seconds is not written again."""
    if at is None:
        return None
    step = 60 if (at - now).total_seconds() < 3600 else 300
    seconds = round(at.timestamp() / step) * step
    return datetime.fromtimestamp(seconds, tz=at.tzinfo)
