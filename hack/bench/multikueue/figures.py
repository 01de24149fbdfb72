"""The bench's figures from what it noted, with no cluster: the throughput,
the per-job latencies, each stage of a dispatch, the requests MultiKueue's
clients sent the workers, and the client-side throttling Kueue logged."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..common.figures import quantile
from ..common.metrics import samples

# A job's way from its create on the manager to Running on a worker, in order:
# what each stage's time is (when the bench's watches first saw it).
STAGES = (
    ("created", "the bench's create on the manager returned"),
    ("workload", "the manager's operator made its Workload"),
    ("reserved", "the manager's Kueue reserved quota (QuotaReserved)"),
    ("remote", "MultiKueue made a Workload on a worker (the first of the two)"),
    ("remote_reserved", "a worker's Kueue reserved quota for it"),
    ("dispatched", "the manager's check `multikueue` Ready: the worker's job made"),
    ("running", "the job Running on its worker (its operator, the stand-in kubelet)"),
    ("mirrored", "Running on the manager: MultiKueue copied the worker's status"),
)
# The requests of MultiKueue's remote clients (the manager's Kueue on each
# worker): the worker's own clients read workloads and jobs from informers
# (LIST, WATCH) and write their status (subresource status), so these verbs on
# the two resources with no subresource are MultiKueue's. Not PUT: the
# worker's operator adopts each Workload MultiKueue made with one (its owner
# reference), and MultiKueue updates a remote Workload only for preemption
# gates, which these jobs lack.
REMOTE_VERBS = ("GET", "POST", "PATCH", "DELETE")
REMOTE_RESOURCES = ("workloads", "pytorchtrainingjobs")
THROTTLED = "client-side throttling"


@dataclass(frozen=True)
class Spread:
    """How long the jobs took for a span: median, p95 and the longest (s)."""

    n: int
    p50: float
    p95: float
    longest: float

    def __str__(self) -> str:
        if not self.n:
            return "-"
        return f"{self.p50:.1f} / {self.p95:.1f} / {self.longest:.1f}"


def spread(seconds: Iterable[float]) -> Spread:
    xs = list(seconds)
    return Spread(len(xs), quantile(xs, 0.5), quantile(xs, 0.95), max(xs, default=float("nan")))


def throughput(start: float, ends: Iterable[float]) -> float | None:
    """Jobs a second from ``start`` to the last of ``ends`` (None when none ended)."""
    xs = list(ends)
    if not xs or max(xs) <= start:
        return None
    return len(xs) / (max(xs) - start)


def latencies(created: Mapping[str, float], reached: Mapping[str, float]) -> dict[str, float]:
    """Each job's seconds from its create to ``reached`` (those that got there)."""
    return {name: reached[name] - t for name, t in created.items() if name in reached}


@dataclass(frozen=True)
class Stage:
    """A stage: how many jobs reached it, when the last did (s after the first
    create) and the spread of the step from the stage before it."""

    name: str
    what: str
    reached: int
    last_s: float | None
    step: Spread


def stages(times: Mapping[str, Mapping[str, float]]) -> list[Stage]:
    """Each of :data:`STAGES` from ``times`` (stage -> job -> monotonic time;
    ``created`` holds every job)."""
    t0 = min(times["created"].values())
    out, before = [], times["created"]
    for name, what in STAGES:
        now = times.get(name, {})
        steps = [now[j] - before[j] for j in now if j in before]
        last = max(now.values()) - t0 if now else None
        out.append(Stage(name, what, len(now), last, spread(steps)))
        before = now
    return out


def remote_requests(metrics: str) -> Counter[tuple[str, str]]:
    """A worker's ``apiserver_request_total`` of :data:`REMOTE_VERBS` on
    :data:`REMOTE_RESOURCES` (no subresource), by (verb, resource)."""
    out: Counter[tuple[str, str]] = Counter()
    for labels, value in samples(metrics, "apiserver_request_total"):
        verb, resource = labels.get("verb", ""), labels.get("resource", "")
        if verb in REMOTE_VERBS and resource in REMOTE_RESOURCES and not labels.get("subresource"):
            out[(verb, resource)] += int(value)
    return out


# client-go's line, in its older plain form ("Waited for 1.2s due to
# client-side throttling, not priority and fairness, request: GET:https://...")
# or as key-value pairs (delay="1.2s" ... verb="GET" URL="https://...").
def busy_rate(series: list[tuple[float, int]]) -> float | None:
    """A counter ``series``' mean rate a second from its start (time 0) to the
    first sample at its last count: while it still grew."""
    if not series or series[-1][1] <= 0:
        return None
    end = next(t for t, n in series if n == series[-1][1])
    return series[-1][1] / end if end > 0 else None


def peak_rate(series: list[tuple[float, int]], window: float) -> float | None:
    """The highest rate a second of a counter ``series`` ((time, count), in
    time order) over any span of at least ``window`` seconds between two of
    its samples; None when it spans less."""
    best = None
    for i, (t0, n0) in enumerate(series):
        later = next(((t, n) for t, n in series[i + 1 :] if t - t0 >= window), None)
        if later is None:
            break
        rate = (later[1] - n0) / (later[0] - t0)
        best = rate if best is None else max(best, rate)
    return best


_DELAY = re.compile(r'(?:Waited for |delay"?[=:] ?"?)([0-9.]+)(ms|s|m)\b')
_VERB = re.compile(r'(?:request: |verb"?[=:] ?"?)([A-Z]+)')
_URL = re.compile(r'https?://([^/\s"]+)([^\s"]*)')


@dataclass(frozen=True)
class Throttled:
    """A client-side throttling line of client-go in a log: how long the request
    waited for its client's own limiter, its verb, host and resource."""

    waited_s: float
    verb: str
    host: str
    resource: str


def throttled(lines: Iterable[str]) -> list[Throttled]:
    """client-go's "Waited for ... due to client-side throttling" lines (logged
    when a request waited over a second, at most once a second at log level 2,
    once in ten seconds at 0): each one's wait, verb, host and resource."""
    out = []
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0}
    for line in lines:
        if THROTTLED not in line:
            continue
        line = line.replace('\\"', '"')
        delay, verb, url = _DELAY.search(line), _VERB.search(line), _URL.search(line)
        if delay is None or url is None:
            continue
        waited = float(delay.group(1)) * scale[delay.group(2)]
        method = verb.group(1) if verb else "?"
        out.append(Throttled(waited, method, url.group(1), _resource(url.group(2))))
    return out


def _resource(path: str) -> str:
    """The resource an API path names: ``/apis/G/V/namespaces/NS/R/NAME`` or
    ``/api/V/R``."""
    parts = path.partition("?")[0].strip("/").split("/")
    if "namespaces" in parts:
        i = parts.index("namespaces")
        return parts[i + 2] if len(parts) > i + 2 else "namespaces"
    core = 2 if parts and parts[0] == "api" else 3
    return parts[core] if len(parts) > core else path
