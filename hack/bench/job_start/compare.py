"""Runs against each other: the comparisons of two scenarios of a size,
each (size, scenario)'s median run, and the targets."""

from __future__ import annotations

from collections.abc import Callable

from ..common.figures import fmt, ratio
from .run import Run

RSS_LIMIT_MB = 450
"""The operator's peak RSS a 10000x4 run must stay under (MB, 10^6 bytes)."""
CPU_TARGET = 0.75
"""The operator's CPU per job at its defaults against the baseline's, at most."""


PAIRS = (
    ("defaults", "baseline"),
    ("tuned", "baseline"),
    ("defaults", "tuned"),
    ("tuned", "ceiling"),
    ("tuned", "writes"),
    ("defaults", "writes"),
    ("writes", "ceiling"),
    ("defaults", "kubeflow"),
    ("baseline", "kubeflow"),
)
"""The comparisons :func:`comparisons` prints, where a size ran both."""
NO_BUDGET = {"ceiling", "kubeflow"}
"""Scenarios whose writes are not the operator's reconcile budget: none, or
another controller's (its job kind's status is not counted there)."""


def cpu_per_job(r: Run) -> float | None:
    """The controller's CPU milliseconds per job (the operator's, or the writes
    scenario's stand-in's)."""
    return None if r.cpu_s is None or not r.jobs else 1000 * r.cpu_s / r.jobs


def comparisons(by: dict[tuple[str, str], Run]) -> str:
    """Every pair of :data:`PAIRS` a size ran, as ratios (first / second) of
    the time until all pods exist and until all jobs are Running, the CPU
    per job, the reconcile-budget writes per job and the peak RSS ("-" where
    either lacks the figure)."""
    rows = [
        "| size | first / second | all pods exist | all jobs Running | CPU per job | "
        "writes per job | peak RSS |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    sizes = sorted({size for size, _ in by}, key=lambda z: [int(x) for x in z.split("x")])
    for size in sizes:
        for a, b in PAIRS:
            x, y = by.get((size, a)), by.get((size, b))
            if x is None or y is None:
                continue
            writes = [r.budget_writes / r.jobs if r.jobs else None for r in (x, y)]
            rows.append(
                f"| {size} | {a} / {b} | {ratio(x.pods_s, y.pods_s)} | "
                f"{ratio(x.running_s, y.running_s)} | {ratio(cpu_per_job(x), cpu_per_job(y))} | "
                f"{ratio(*writes) if not {x.scenario, y.scenario} & NO_BUDGET else '-'}"
                f" | {ratio(x.rss_peak_mib, y.rss_peak_mib)} |"
            )
    return "\n".join(rows)


def medians(runs: list[Run]) -> dict[tuple[str, str], Run]:
    """Each (size, scenario)'s median run by the time until all pods exist (the
    lower middle one of an even number; runs that timed out sort last)."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.size, r.scenario), []).append(r)
    out = {}
    for key, group in groups.items():
        ranked = sorted(group, key=lambda r: float("inf") if r.pods_s is None else r.pods_s)
        out[key] = ranked[(len(ranked) - 1) // 2]
    return out


def targets(by: dict[tuple[str, str], Run]) -> list[str]:
    """Each target the runs ``by`` (size, scenario) meet or miss, as a line:
    the speeds first, then the costs."""
    return [*_speed_targets(by), *_cost_targets(by)]


def _speed_targets(by: dict[tuple[str, str], Run]) -> list[str]:
    out = []
    get = _getter(by)
    d, b = get("200x4", "defaults"), get("200x4", "baseline")
    if d and b:
        out.append(
            f"200x4 all Running, baseline / defaults: {ratio(b.running_s, d.running_s)}x "
            "faster (target >= 1.5)"
        )
    for size in ("200x4", "1000x4"):
        t, c, w = get(size, "tuned"), get(size, "ceiling"), get(size, "writes")
        if t and c:
            out.append(
                f"{size} tuned pods / ceiling pods: {ratio(t.pods_s, c.pods_s)} (target <= 1.25); "
                f"all Running / ceiling pods: {ratio(t.running_s, c.pods_s)} (target <= 1.5)"
            )
        if t and w:
            out.append(
                f"{size} tuned pods / writes pods: {ratio(t.pods_s, w.pods_s)} (target <= 1.25); "
                f"all Running / writes pods: {ratio(t.running_s, w.pods_s)} (target <= 1.5); "
                f"all Running / writes all Running: {ratio(t.running_s, w.running_s)}"
            )
        if w and c:
            out.append(
                f"{size} writes pods / ceiling pods: {ratio(w.pods_s, c.pods_s)}: the same "
                "writes with no operator against the pods alone"
            )
    c, w = get("1x512", "ceiling"), get("1x512", "writes")
    for scenario in ("tuned", "defaults", "baseline"):
        r = get("1x512", scenario)
        if r and c:
            out.append(
                f"1x512 {scenario} pods / ceiling pods: {ratio(r.pods_s, c.pods_s)} "
                "(target <= 1.5 when tuned)"
                + (f"; / writes pods: {ratio(r.pods_s, w.pods_s)}" if w else "")
            )
    return out


def _cost_targets(by: dict[tuple[str, str], Run]) -> list[str]:
    out = []
    get = _getter(by)
    for (size, scenario), r in sorted(by.items()):
        if scenario in ("defaults", "tuned") and r.jobs and size.endswith("x4"):
            cpu_ms = None if r.cpu_s is None else 1000 * r.cpu_s / r.jobs
            out.append(
                f"{size} {scenario}: {r.budget_writes / r.jobs:.2f} reconcile-budget writes "
                f"per job (target <= 7), CPU {fmt(cpu_ms)} ms per job (target <= 20)"
            )
    for size in sorted({size for size, _ in by}):
        d, b = get(size, "defaults"), get(size, "baseline")
        if d and b:
            out.append(
                f"{size} CPU per job, defaults / baseline: {fmt(cpu_per_job(d))} / "
                f"{fmt(cpu_per_job(b))} ms = {ratio(cpu_per_job(d), cpu_per_job(b))} "
                f"(target <= {CPU_TARGET})"
            )
    for (size, scenario), r in sorted(by.items()):
        if scenario == "defaults" and r.jobs >= 10_000 and r.rss_peak_mib is not None:
            mb = 2**20 / 1e6
            out.append(
                f"{size} defaults: RSS at ready {fmt((r.rss_ready_mib or 0) * mb, '.0f')} MB, "
                f"peak {fmt(r.rss_peak_mib * mb, '.0f')} MB (target < {RSS_LIMIT_MB} MB), "
                f"CPU {fmt(cpu_per_job(r))} ms per job"
            )
    small, large = get("200x4", "tuned"), get("1000x4", "tuned")
    if small and large and None not in (small.rss_peak_mib, large.rss_peak_mib):
        # The growth rate: what 800 jobs more add to the peak RSS, against what
        # they add to the informer stores (fixed costs such as threads cancel).
        assert small.rss_peak_mib is not None and large.rss_peak_mib is not None
        d_rss = large.rss_peak_mib - small.rss_peak_mib
        d_cache = (large.cache_mib or 0) - (small.cache_mib or 0)
        d_resident = (large.cache_rss_mib or 0) - (small.cache_rss_mib or 0)
        out.append(
            f"tuned, 200x4 to 1000x4: peak RSS +{d_rss:.1f} MiB, informer stores "
            f"+{d_resident:.1f} MiB resident: {ratio(d_rss, d_resident)} (target <= 1); "
            f"+{d_cache:.1f} MiB traced: {ratio(d_rss, d_cache)}"
        )
    return out


def _getter(by: dict[tuple[str, str], Run]) -> Callable[[str, str], Run | None]:
    def get(size: str, scenario: str) -> Run | None:
        return by.get((size, scenario))

    return get
