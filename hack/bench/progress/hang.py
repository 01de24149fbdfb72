"""``hang``: a simulation on a fake clock, no sockets: the endpoint's
``handle`` driven by many replicas' ranks, each sending again when the
answer's ``next`` says; one replica goes silent halfway. The hang rule (the
oldest pod heard, against the timeout) is checked every simulated second."""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

from t9k_operator.integrations.progress.endpoint import ProgressEndpoint
from t9k_operator.integrations.progress.pods import job_path
from t9k_operator.integrations.progress.store import ProgressStore

from ..common.figures import quantile
from .world import HANG, KIND, FakeClock, world


@dataclass
class Outcome:
    """What the simulation saw: answers by status, the waits told, the 429s
    after the first two minutes, the hang verdicts (when, which pod), and the
    longest silence of a healthy replica."""

    start: float
    end: float
    silent_at: float
    silent_pod: str
    statuses: dict[int, int] = field(default_factory=dict)
    nexts: list[float] = field(default_factory=list)
    steady_429: int = 0
    verdicts: list[tuple[float, str]] = field(default_factory=list)
    worst_healthy: float = 0.0
    cpu: float = 0.0


def part_hang(replicas: int = 1000, ranks: int = 8, minutes: float = 10.0) -> None:
    print(
        f"\n## hang: {replicas} replicas x {ranks} ranks, hangTimeoutSeconds {HANG}, "
        f"{minutes:g} simulated minutes, fake clock"
    )
    clock = FakeClock()
    endpoint, store, _ = world({"big": replicas}, hang=HANG, clock=clock)
    start = clock.mono
    out = Outcome(start, start + minutes * 60, start + minutes * 30, f"big-{replicas // 2}")
    began = time.process_time()
    _simulate(endpoint, store, clock, out, replicas, ranks)
    out.cpu = time.process_time() - began
    _print(out)


def _simulate(
    endpoint: ProgressEndpoint,
    store: ProgressStore,
    clock: FakeClock,
    out: Outcome,
    replicas: int,
    ranks: int,
) -> None:
    path = job_path("ns", KIND.plural, "big")
    silent_pod = replicas // 2
    due = [
        (out.start + (i % 1000) / 1000, pod, rank)
        for i, (pod, rank) in enumerate((p, r) for p in range(replicas) for r in range(ranks))
    ]
    heapq.heapify(due)
    next_check = out.start + 1.0
    while due and due[0][0] < out.end:
        at, pod, rank = heapq.heappop(due)
        while next_check <= at:  # the hang rule, each simulated second
            clock.mono = next_check
            _check(store, clock, out, next_check)
            next_check += 1.0
        clock.mono = at
        if pod == silent_pod and at >= out.silent_at:
            continue  # this replica went silent
        body = b'{"step": 1, "totalSteps": 100}' if rank == 0 else b"{}"
        headers = {"Authorization": f"Bearer t:big:{pod}", "X-T9k-Rank": str(rank)}
        answer = endpoint.handle("POST", path, headers, body)
        out.statuses[answer.status] = out.statuses.get(answer.status, 0) + 1
        if answer.status == 429 and at >= out.start + 120:
            out.steady_429 += 1
        wait = answer.next if answer.next is not None else answer.retry_after or 1.0
        out.nexts.append(wait)
        heapq.heappush(due, (at + min(60.0, max(1.0, wait)), pod, rank))


def _check(store: ProgressStore, clock: FakeClock, out: Outcome, at: float) -> None:
    """The hang rule at ``at``: each replica's silence against the timeout."""
    now = clock.now()
    for r in store.latest("uid-big"):
        silence = (now - r.last_heard).total_seconds()
        if silence >= HANG and not any(v[1] == r.pod for v in out.verdicts):
            out.verdicts.append((at - out.start, r.pod))
        if r.pod != out.silent_pod:
            out.worst_healthy = max(out.worst_healthy, silence)


def _print(out: Outcome) -> None:
    statuses, nexts = out.statuses, out.nexts
    total = sum(statuses.values())
    print(
        f"reports {total} ({total / (out.end - out.start):.0f} a second), "
        f"202: {statuses.get(202, 0)}, 429: {statuses.get(429, 0)} "
        f"({statuses.get(429, 0) / total:.2%}), other: "
        f"{total - statuses.get(202, 0) - statuses.get(429, 0)}; 429s after the first "
        f"2 minutes (every token reviewed): {out.steady_429}"
    )
    print(
        f"next told: p50 {quantile(nexts, 0.5):.1f} s, max {max(nexts):.1f} s; longest silence "
        f"of a healthy replica {out.worst_healthy:.0f} s = {out.worst_healthy / HANG:.2f} "
        "of the timeout"
    )
    healthy = [v for v in out.verdicts if v[1] != out.silent_pod]
    caught = [v[0] for v in out.verdicts if v[1] == out.silent_pod]
    went = out.silent_at - out.start
    print(
        f"healthy replicas judged hung: {len(healthy)}; the silent replica (silent at "
        f"{went:.0f} s) judged hung at "
        + (
            f"{caught[0]:.0f} s, {caught[0] - went:.0f} s after it went silent "
            f"= {(caught[0] - went) / HANG:.2f} of the timeout"
            if caught
            else "never"
        )
    )
    cpu = out.cpu
    print(f"(simulation CPU {cpu:.1f} s for {total} handled: {cpu / total * 1e6:.0f} us a report)")
