"""How often each reporting process is told to report: the endpoint's pace.

Every answer of the endpoint carries ``next``, the seconds the reporter waits
before its next report. The :class:`Pacer` computes it from the processes
(ranks) that reported lately, counted per job, and the endpoint's load:

- the endpoint takes about ``capacity`` reports a second, shared by every
  rank of every job: with N ranks reporting, each is told
  ``max(floor, N / capacity)`` seconds, so the ranks together send at most
  ``capacity`` a second however many there are;
- a job that asks to be judged for hangs (``hangTimeoutSeconds``) has its
  ranks told at most a quarter of that (half, when its pods have several
  reporting ranks each: any of them keeps its pod heard), so a healthy
  replica is heard several times within its window whatever the load;
- when more arrives than the capacity within the jobs' rates (ranks not yet
  counted, jobs that report more often than told but within their rate),
  everyone's pace is stretched by that ratio; what a job sends beyond its
  rate is refused and stretches no one's;
- each answer is spread a little (down to 80 %), so ranks that started
  together do not stay in step.

:meth:`Pacer.take` limits each job (the endpoint's 429) to twice what its
ranks send at that pace (:meth:`Pacer.job_rate`), with a burst of twice its
ranks, and at least the endpoint's per-job minimum: a job that obeys is never
refused, and one that does not uses up only its own share.

Time is the caller's (monotonic seconds): the tests and the benchmark drive
it with a fake clock.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

CAPACITY = 200.0
"""Reports a second the endpoint is paced for (all jobs together)."""
FLOOR = 1.0
"""The shortest pace: no process reports more than once a second."""
CEILING = 60.0
"""The longest pace (without a hang timeout)."""
HANG_SHARE = 0.25
"""The pace of a job judged for hangs is at most this share of its timeout..."""
HANG_SHARE_SHARED = 0.5
"""... or this share, when its pods have two reporting ranks or more each."""
SPREAD = 0.2
"""Each pace told is shortened by a random share up to this."""
FORGET_AFTER = 3.0
"""A rank not heard for this many of its paces is no longer counted."""
LOAD_WINDOW = 10.0
"""Seconds the endpoint's load is measured over."""
RATE_SHARE = 2.0
"""A job may send this many times what its ranks send at their pace."""


@dataclass
class _Job:
    ranks: dict[str, float] = field(default_factory=dict)  # pod/rank -> when last heard
    pods: dict[str, int] = field(default_factory=dict)  # pod -> its ranks counted
    pace: float = FLOOR
    tokens: float = 0.0  # the job's rate limit: reports it may send now
    filled: float = 0.0  # when the tokens were last counted


class Pacer:
    """The pace of each job's ranks, from how many report and the endpoint's
    load. Thread-safe."""

    def __init__(
        self,
        capacity: float = CAPACITY,
        floor: float = FLOOR,
        ceiling: float = CEILING,
        seed: int | None = None,
    ) -> None:
        self.capacity, self.floor, self.ceiling = capacity, floor, ceiling
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._ranks = 0
        self._random = random.Random(seed)
        self._window_start = 0.0
        self._window_count = 0
        self._load = 0.0  # reports a second over the last full window
        self._swept = 0.0

    @property
    def ranks(self) -> int:
        """Ranks counted (all jobs)."""
        return self._ranks

    @property
    def load(self) -> float:
        """Reports a second that arrived over the last measured window."""
        return self._load

    def arrived(self, now: float) -> None:
        """A report within its job's rate arrived: counted in the load."""
        with self._lock:
            if now - self._window_start >= LOAD_WINDOW:
                elapsed = now - self._window_start
                self._load = self._window_count / elapsed if elapsed > 0 else 0.0
                self._window_start, self._window_count = now, 0
            self._window_count += 1

    def heard(self, job: str, rank: str, now: float, hang_timeout: float | None) -> float:
        """Rank ``rank`` (``<pod>/<local rank>``) of ``job`` reported at ``now``:
        the seconds it is told to wait before its next report."""
        with self._lock:
            if now - self._swept >= LOAD_WINDOW:
                self._sweep(now)
            entry = self._jobs.get(job)
            if entry is None:
                entry = self._jobs[job] = _Job()
            if rank not in entry.ranks:
                self._ranks += 1
                pod = rank.rsplit("/", 1)[0]
                entry.pods[pod] = entry.pods.get(pod, 0) + 1
                entry.tokens += RATE_SHARE  # a rank not counted yet brings its share
            entry.ranks[rank] = now
            shared = len(entry.ranks) >= 2 * len(entry.pods)
            entry.pace = self._pace(hang_timeout, shared)
            return entry.pace * (1.0 - SPREAD * self._random.random())

    def _pace(self, hang_timeout: float | None, shared: bool = False) -> float:
        pace = max(self.floor, self._ranks / self.capacity)
        if self._load > self.capacity:
            pace *= self._load / self.capacity
        ceiling = self.ceiling
        if hang_timeout:
            share = HANG_SHARE_SHARED if shared else HANG_SHARE
            ceiling = min(ceiling, max(self.floor, hang_timeout * share))
        return min(pace, ceiling)

    def pace(self, hang_timeout: float | None = None) -> float:
        """The pace a rank is told now (before the spread)."""
        with self._lock:
            return self._pace(hang_timeout)

    def job_rate(self, job: str) -> float:
        """Reports a second ``job``'s counted ranks send at their pace."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return 0.0
            return len(entry.ranks) / entry.pace

    def take(self, job: str, now: float, qps: float, burst: int) -> float | None:
        """One report of ``job`` (heard already) at ``now``, within its rate:
        None, else the seconds until it would be."""
        with self._lock:
            entry = self._jobs.get(job)
            if entry is None:
                return None
            rate = max(qps, RATE_SHARE * len(entry.ranks) / entry.pace)
            most = max(float(burst), RATE_SHARE * len(entry.ranks))
            if entry.filled == 0.0:
                entry.tokens, entry.filled = most, now
            entry.tokens = min(most, entry.tokens + max(0.0, now - entry.filled) * rate)
            entry.filled = now
            if entry.tokens >= 1.0:
                entry.tokens -= 1.0
                return None
            return max(1.0, (1.0 - entry.tokens) / rate)

    def job_ranks(self, job: str) -> int:
        with self._lock:
            entry = self._jobs.get(job)
            return 0 if entry is None else len(entry.ranks)

    def forget(self, job: str) -> None:
        """The job is gone: its ranks no longer count."""
        with self._lock:
            entry = self._jobs.pop(job, None)
            if entry is not None:
                self._ranks -= len(entry.ranks)

    def _sweep(self, now: float) -> None:
        """Stop counting the ranks not heard for a few of their paces."""
        self._swept = now
        for name in list(self._jobs):
            entry = self._jobs[name]
            limit = now - FORGET_AFTER * max(entry.pace, self.floor) - LOAD_WINDOW
            gone = [rank for rank, at in entry.ranks.items() if at < limit]
            for rank in gone:
                del entry.ranks[rank]
                pod = rank.rsplit("/", 1)[0]
                entry.pods[pod] -= 1
                if not entry.pods[pod]:
                    del entry.pods[pod]
            self._ranks -= len(gone)
            if not entry.ranks:
                del self._jobs[name]
