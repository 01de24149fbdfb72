"""Idle GPUs: a Running job whose GPUs sat under a utilization threshold for a
whole window gets the condition ``GPUsIdle=True`` and one Warning Event; it
is never stopped. On with ``--prometheus-url`` (a Prometheus that scrapes
NVIDIA's DCGM exporter).

The watch that asks Prometheus (``integrations/gpu_usage/``, this integration's
server) judges every Running job holding GPUs once a period, with one query
(:mod:`t9k_operator.integrations.gpu_usage.usage`), and provides its verdicts under this
integration's name; a verdict that changes queues the job. Per job, in a
reconcile, this integration reads the job's verdict through
``Caches.source("gpu-usage")`` and, in ``status``:

- Idle: ``GPUsIdle=True`` (reason ``GPUsIdle``, the utilization and the
  window in the message) and, when it was not True before, a Warning Event;
- Busy: ``GPUsIdle=False`` (reason ``GPUsInUse``), and a Normal Event when it
  was True;
- Unknown (a pod has run for less than the window, Prometheus has no series
  of its GPUs, or no verdict yet): the condition stays as it was;
- a job that is no longer Running and was idle: ``GPUsIdle=False``, reason
  ``NotRunning``.

Everything here is pure: the verdicts come in through the caches.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast
from urllib.parse import urlsplit

from t9k_operator.integrations.gpu_usage.usage import BUSY, IDLE, Verdict, human_window, percent
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import get_condition, set_condition
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, Event, JobInput, Rule

CONDITION = "GPUsIdle"
IDLE_REASON, IN_USE, NOT_RUNNING = "GPUsIdle", "GPUsInUse", "NotRunning"
DEFAULT_THRESHOLD = 5.0
DEFAULT_WINDOW = 900
MIN_WINDOW, MAX_WINDOW = 10, 86400
"""The window's bounds, seconds: a window should span several of the
exporter's scrapes; a day is as long as an idle job is worth waiting for."""


class Verdicts(Protocol):
    """What the watch provides this integration (``Caches.source``)."""

    def verdict(self, job_uid: str) -> Verdict | None:
        """The job's latest verdict; None: not judged (not Running, no GPUs,
        or the watch has not asked Prometheus since it started)."""
        ...


@dataclass(frozen=True)
class WatchOptions:
    """The flags, as given (the watch's server reads them)."""

    url: str
    threshold: float
    window: int

    @property
    def period(self) -> float:
        """Seconds between two queries: a tenth of the window, 1 to 60."""
        return min(60.0, max(1.0, self.window / 10))


@dataclass(frozen=True)
class GPUState:
    verdict: Verdict | None
    now: datetime


def parse_window(text: str) -> int:
    """``15m``, ``90s``, ``1h``, or plain seconds."""
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 15m, 90s)") from None


class GPUUsage(Base[GPUState]):
    """The idle-GPU condition of Running jobs, from the watch's verdicts."""

    name = "gpu-usage"

    def __init__(self, options: WatchOptions) -> None:
        self.options = options

    # -- flags ----------------------------------------------------------------------

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("idle GPUs (docs/observability.md#idle-gpus)")
        g.add_argument(
            "--prometheus-url",
            default=None,
            help="a Prometheus that scrapes NVIDIA's DCGM exporter (http://host:9090): "
            "Running jobs whose GPUs sit idle get the condition GPUsIdle",
        )
        g.add_argument(
            "--gpu-idle-threshold",
            type=float,
            default=DEFAULT_THRESHOLD,
            help="a job's GPUs are idle while every sample of each stays under this "
            f"utilization, in percent (default {DEFAULT_THRESHOLD:g})",
        )
        g.add_argument(
            "--gpu-idle-window",
            type=parse_window,
            default=DEFAULT_WINDOW,
            help="for how long they must stay under it (default 15m; "
            f"{human_window(MIN_WINDOW)} to {human_window(MAX_WINDOW)})",
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        if args.prometheus_url is not None:
            url = urlsplit(str(args.prometheus_url))
            if url.scheme not in ("http", "https") or not url.netloc:
                return "--prometheus-url must be an http:// or https:// address"
        if not 0 < args.gpu_idle_threshold <= 100:
            return "--gpu-idle-threshold must be a percentage above 0, at most 100"
        if not MIN_WINDOW <= args.gpu_idle_window <= MAX_WINDOW:
            return (
                f"--gpu-idle-window must be from {human_window(MIN_WINDOW)} to "
                f"{human_window(MAX_WINDOW)}"
            )
        return None

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> GPUUsage | None:
        if not args.prometheus_url:
            return None
        return cls(WatchOptions(args.prometheus_url, args.gpu_idle_threshold, args.gpu_idle_window))

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return ()  # it reads the jobs and pods the operator caches anyway

    # -- hooks ----------------------------------------------------------------------

    def observe(self, job: JobInput, caches: Caches) -> tuple[GPUState, JobView] | None:
        source = cast("Verdicts | None", caches.source(self.name))
        if source is None:
            return None  # the watch is not running: nothing is judged
        return GPUState(source.verdict(job.view.uid), job.now), job.view

    def status(self, state: GPUState, view: JobView, status: Obj) -> list[Event]:
        conditions: list[Obj] = status.setdefault("conditions", [])
        before = get_condition(status, CONDITION) or {}
        was_idle = before.get("status") == "True"
        now = state.now
        if status.get("phase") != "Running":
            if was_idle:
                set_condition(
                    conditions, CONDITION, "False", NOT_RUNNING, "the job is not running", now
                )
            return []
        verdict = state.verdict
        if verdict is None or verdict.state not in (IDLE, BUSY):
            return []
        window = human_window(self.options.window)
        threshold = percent(self.options.threshold)
        if verdict.state == IDLE:
            if was_idle:
                return []  # said once: the message keeps the figures it was found with
            message = (
                f"the job's {verdict.gpus} GPU(s) stayed under {threshold} utilization for "
                f"{window} (average {percent(verdict.avg)}, peak {percent(verdict.peak)}); "
                "the job keeps running and holding them"
            )
            set_condition(conditions, CONDITION, "True", IDLE_REASON, message, now)
            return [("Warning", IDLE_REASON, message)]
        message = f"the job's GPUs reached {threshold} utilization within the last {window}"
        set_condition(conditions, CONDITION, "False", IN_USE, message, now)
        if was_idle:
            return [("Normal", IN_USE, f"{message} (peak {percent(verdict.peak)})")]
        return []
