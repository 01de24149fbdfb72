"""A run of the bench: what it is given (:class:`Options`) and what it measured
(:class:`Run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .integrations import Integrations


@dataclass(frozen=True)
class Options:
    """What every run of the bench shares: the source trees (``tree`` and, for
    the baseline, ``baseline``), the creates' threads, the waits' timeout,
    where logs go, more flags for this tree's operator, ``--pprof``'s
    seconds, the integrations, ``--py-spy``'s program and the kube-apiserver
    flags."""

    sources: dict[str, Path]
    concurrency: int
    timeout: float | None
    logs: Path
    operator_flags: tuple[str, ...] = ()
    pprof: int = 0
    using: Integrations = field(default_factory=Integrations)
    py_spy: str | None = None
    server_flags: tuple[str, ...] = ()


@dataclass
class Run:
    """One run's figures (``--json`` writes them as they are)."""

    size: str
    scenario: str
    pods_s: float | None = None
    running_s: float | None = None
    cpu_s: float | None = None
    rss_ready_mib: float | None = None
    rss_peak_mib: float | None = None
    writes: dict[str, int] = field(default_factory=dict)
    budget_writes: int = 0
    events: int = 0
    jobs: int = 0
    pods: int = 0
    note: str = ""
    pod_create_ms: float | None = None  # the API server's mean time on a pod create
    server_s: dict[str, float] = field(default_factory=dict)  # its seconds per kind of write
    cache_mib: float | None = None  # what the operator's informer stores hold at the end
    cache_rss_mib: float | None = None  # the same, as resident memory in a fresh process
    rss_end_mib: float | None = None
    operator: dict[str, float] = field(default_factory=dict)
    # CPU seconds by process (and the machine's busy and all, and the wall
    # time) from the first submission until every pod exists, and until the end.
    cpu_to_pods: dict[str, float] = field(default_factory=dict)
    cpu_to_end: dict[str, float] = field(default_factory=dict)
    rep: int = 0  # which of --repeat runs (0: the only one)
    # The operator's GETs (gets, lists, watches) from just before the first
    # submission until every job was Running (None: no operator, or it does
    # not count its requests).
    operator_reads: int | None = None  # the reconciles' (GETs less the informers')
    informer_reads: int | None = None  # the informers' list pages and watches
    integrations: str = "none"  # the operator's --kueue / --gang-scheduler flags
    # Watchers the API server closed over the same span, by resource (everyone's).
    closed_watchers: dict[str, int] = field(default_factory=dict)
    # --py-spy: the operator's samples over the same span, as (function,
    # self share, cumulative share), the largest first by each.
    profile: dict[str, list[tuple[str, float, float]]] = field(default_factory=dict)
    profile_samples: int = 0

    @property
    def label(self) -> str:
        return f"{self.scenario} #{self.rep}" if self.rep else self.scenario
