"""What a job's GPUs are doing, read from NVIDIA's DCGM exporter through
Prometheus: the metrics and labels read, the PromQL asked, how an answer
reads, and when a job's GPUs count as idle.

Pure (no I/O, no clock): the operator's GPU-usage watch
(``integrations/gpu_usage/``), ``t9k top jobs`` / ``t9k describe`` and the SDK ask
Prometheus with these queries and read its answers with these functions, so
they agree on every figure.

The exporter (``etc/default-counters.csv``) serves, per GPU,
``DCGM_FI_DEV_GPU_UTIL`` (percent), ``DCGM_FI_DEV_FB_USED`` and
``DCGM_FI_DEV_FB_FREE`` (MiB), labelled ``gpu``, ``UUID``, ``device``,
``modelName`` and ``Hostname``, and, with its Kubernetes mapping on, the
``pod``, ``namespace`` and ``container`` that hold the GPU. Scraped through a
ServiceMonitor without ``honorLabels``, those three collide with the
target's own labels (the exporter's pod) and arrive as ``exported_pod``,
``exported_namespace`` and ``exported_container``: every query here reads
the ``exported_`` label when there is one, else the plain one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

UTIL = "DCGM_FI_DEV_GPU_UTIL"
"""A GPU's utilization, in percent (the exporter's sampling period)."""
FB_USED = "DCGM_FI_DEV_FB_USED"
"""A GPU's framebuffer memory in use, MiB."""
FB_FREE = "DCGM_FI_DEV_FB_FREE"
"""A GPU's framebuffer memory free, MiB."""

STAT = "t9k_stat"
"""The label the queries below add to tell their parts apart in one answer."""

PodKey = tuple[str, str]
"""A pod: (namespace, name)."""


def _owner_labels(expr: str) -> str:
    """``expr`` with ``pod`` and ``namespace`` set from ``exported_pod`` and
    ``exported_namespace`` where those are set (scraped without honorLabels)."""
    pod = f'label_replace({expr}, "pod", "$1", "exported_pod", "(.+)")'
    return f'label_replace({pod}, "namespace", "$1", "exported_namespace", "(.+)")'


def _tagged(expr: str, stat: str) -> str:
    return f'label_replace({expr}, "{STAT}", "{stat}", "", "")'


def _selector(metric: str, namespace: str | None) -> str:
    """``metric`` of the GPUs held in ``namespace`` (None: every namespace),
    under either spelling of the label."""
    if namespace is None:
        return metric
    quoted = namespace.replace("\\", "\\\\").replace('"', '\\"')
    return f'({metric}{{exported_namespace="{quoted}"}} or {metric}{{namespace="{quoted}"}})'


def window_query(window_seconds: int) -> str:
    """The utilization of each pod's GPUs over the last ``window_seconds``:
    per pod, the highest sample of any of its GPUs (``t9k_stat="max"``) and the
    mean of its GPUs' means (``"avg"``). One query for every pod."""
    w = f"{int(window_seconds)}s"
    peak = f"max by (namespace, pod) ({_owner_labels(f'max_over_time({UTIL}[{w}])')})"
    mean = f"avg by (namespace, pod) ({_owner_labels(f'avg_over_time({UTIL}[{w}])')})"
    return f"{_tagged(peak, 'max')} or {_tagged(mean, 'avg')}"


def current_query(namespace: str | None = None) -> str:
    """Each GPU's latest utilization and memory (``t9k_stat``: ``util``,
    ``used``, ``free``), with the pod holding it; ``namespace``: only the
    GPUs of pods there."""
    parts = [
        _tagged(_owner_labels(_selector(metric, namespace)), stat)
        for metric, stat in ((UTIL, "util"), (FB_USED, "used"), (FB_FREE, "free"))
    ]
    return " or ".join(parts)


@dataclass(frozen=True)
class Sample:
    """One series of an answer: its pod, the GPU (its UUID, else host and
    index), what it is (``t9k_stat``) and its value."""

    pod: PodKey
    gpu: str
    stat: str
    value: float


def samples(result: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """The series of a Prometheus instant-vector ``result`` that name a pod
    (those without, GPUs no pod holds, are left out, as are values that do
    not parse)."""
    out: list[Sample] = []
    for series in result:
        labels = series.get("metric") or {}
        pod, namespace = labels.get("pod"), labels.get("namespace")
        try:
            value = float(series["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not pod or not namespace or value != value:  # NaN
            continue
        gpu = str(labels.get("UUID") or f"{labels.get('Hostname', '')}/{labels.get('gpu', '')}")
        out.append(Sample((str(namespace), str(pod)), gpu, str(labels.get(STAT) or ""), value))
    return out


@dataclass(frozen=True)
class Window:
    """A pod's GPUs over the window: the mean utilization and the highest sample."""

    avg: float
    peak: float


def windows(found: Iterable[Sample]) -> dict[PodKey, Window]:
    """:func:`window_query`'s answer by pod (a pod with only one of its two
    figures is left out)."""
    by: dict[PodKey, dict[str, float]] = {}
    for s in found:
        by.setdefault(s.pod, {})[s.stat] = s.value
    return {p: Window(v["avg"], v["max"]) for p, v in by.items() if "avg" in v and "max" in v}


@dataclass(frozen=True)
class GPUPod:
    """A pod of a running job that holds GPUs: since when its containers run."""

    namespace: str
    name: str
    gpus: int
    running_since: datetime | None


IDLE, BUSY, UNKNOWN = "Idle", "Busy", "Unknown"


@dataclass(frozen=True)
class Verdict:
    """Whether a job's GPUs sat idle over the window (``state``: Idle, Busy, or
    Unknown when it cannot be told yet, ``why``), with the figures: the mean
    utilization of its GPUs and the highest sample, in percent."""

    state: str
    gpus: int = 0
    avg: float = 0.0
    peak: float = 0.0
    why: str = ""


def judge(
    pods: Sequence[GPUPod],
    found: Mapping[PodKey, Window],
    threshold: float,
    window_seconds: int,
    now: datetime,
) -> Verdict:
    """A job's GPUs are idle when every sample of every GPU of every pod
    holding them stayed under ``threshold`` percent over the whole window:
    each such pod has run the window through and Prometheus has its GPUs'
    series. A pod that runs for less, or whose GPUs have no series, leaves
    the verdict Unknown."""
    gpus = sum(p.gpus for p in pods)
    if not pods or gpus == 0:
        return Verdict(UNKNOWN, why="no pod of the job holds GPUs")
    weighted = 0.0
    peak = 0.0
    for pod in pods:
        since = pod.running_since
        if since is None or (now - since).total_seconds() < window_seconds:
            return Verdict(UNKNOWN, gpus, why=f"pod {pod.name} has run for less than the window")
        window = found.get((pod.namespace, pod.name))
        if window is None:
            return Verdict(UNKNOWN, gpus, why=f"no {UTIL} series names pod {pod.name}")
        weighted += window.avg * pod.gpus
        peak = max(peak, window.peak)
    state = IDLE if peak < threshold else BUSY
    return Verdict(state, gpus, round(weighted / gpus, 1), round(peak, 1))


@dataclass(frozen=True)
class Usage:
    """A job's GPUs now, as the exporter last saw them: how many reported,
    their mean and highest utilization (percent), and framebuffer memory in
    use and in all (MiB)."""

    gpus: int
    util_avg: float
    util_max: float
    memory_used: float
    memory_total: float


def usage(found: Iterable[Sample], pods: Iterable[PodKey]) -> Usage | None:
    """:func:`current_query`'s answer for the GPUs of ``pods``; None when none
    of them has a series."""
    wanted = set(pods)
    gpus: dict[tuple[PodKey, str], dict[str, float]] = {}
    for s in found:
        if s.pod in wanted:
            gpus.setdefault((s.pod, s.gpu), {})[s.stat] = s.value
    utils = [g["util"] for g in gpus.values() if "util" in g]
    if not utils:
        return None
    used = sum(g.get("used", 0.0) for g in gpus.values())
    free = sum(g.get("free", 0.0) for g in gpus.values())
    return Usage(
        gpus=len(utils),
        util_avg=round(sum(utils) / len(utils), 1),
        util_max=round(max(utils), 1),
        memory_used=used,
        memory_total=used + free,
    )


def percent(value: float) -> str:
    return f"{value:.0f}%" if value >= 10 or value == 0 else f"{value:.1f}%"


def util_text(u: Usage) -> str:
    """``37% (max 91%)``."""
    return f"{percent(u.util_avg)} (max {percent(u.util_max)})"


def memory_text(u: Usage) -> str:
    """``12.0/80.0 GiB``: in use, and in all."""
    return f"{u.memory_used / 1024:.1f}/{u.memory_total / 1024:.1f} GiB"


def describe_usage(u: Usage) -> str:
    """One line: ``2 GPUs: 37% (max 91%), memory 12.0/80.0 GiB``."""
    gpus = "1 GPU" if u.gpus == 1 else f"{u.gpus} GPUs"
    return f"{gpus}: {util_text(u)}, memory {memory_text(u)}"


def human_window(seconds: int) -> str:
    """``15m``, ``1h30m``, ``45s``."""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")
    return out or "0s"
