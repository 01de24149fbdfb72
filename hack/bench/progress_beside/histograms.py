"""The operator's /metrics over the job-start run: the job controller's
histograms and totals, and the progress reports by result."""

from __future__ import annotations

from ..common.metrics import samples

RECONCILE = "controller_runtime_reconcile_time_seconds"
QUEUE_WAIT = "workqueue_queue_duration_seconds"
REPORTS = "t9k_progress_reports_total"


def buckets(text: str, name: str) -> dict[float, float]:
    """The job controller's histogram ``name``: cumulative count by upper bound."""
    out: dict[float, float] = {}
    for labels, value in samples(text, f"{name}_bucket"):
        if "pytorchtrainingjob" in (labels.get("controller", "") + labels.get("name", "")):
            le = float(labels["le"])
            out[le] = out.get(le, 0.0) + value
    return out


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float | None:
    """``histogram_quantile(q, after - before)``: linear within the bucket the
    q-th observation falls in (the last finite bound when it is past them)."""
    diff = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    total = diff[-1][1] if diff else 0.0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le, count in diff:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def total(text: str, name: str) -> float:
    """The job controller's samples of ``name``, summed."""
    return sum(
        v
        for labels, v in samples(text, name)
        if "pytorchtrainingjob" in (labels.get("controller", "") + labels.get("name", ""))
    )


def reports(text: str) -> dict[str, float]:
    """``t9k_progress_reports_total`` by result."""
    out: dict[str, float] = {}
    for labels, value in samples(text, REPORTS):
        out[labels.get("result", "")] = out.get(labels.get("result", ""), 0.0) + value
    return out
