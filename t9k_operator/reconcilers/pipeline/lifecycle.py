"""A job kind's lifecycle figures and the words that go with them: the Created
Event and counter, the Warning for fields stored but not acted on, restarts,
and a finished job's counter, duration and log line."""

from __future__ import annotations

from typing import Any

import structlog

from t9k_operator.foundation import metrics
from t9k_operator.kinds.contract import JobKind
from t9k_operator.objects import Obj
from t9k_operator.reconcilers import engine
from t9k_operator.runtime.events import EventRecorder

log = structlog.get_logger("t9k_operator.reconcilers.pipeline.job")


class Lifecycle:
    """The lifecycle series of one job kind (its CRD's ``kind``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._namespaces_seen: set[str] = set()  # whose series exist (at 0 or more)

    def series_at_zero(self, namespace: str) -> None:
        """Export this kind's lifecycle series of ``namespace`` at 0 once a job of
        it is seen, so that a job's success, restart or duration is an increase
        rate() and increase() see, not the birth of a series they cannot.
        (Failures carry a reason, which is not known beforehand: rules.yaml
        counts the birth of such a series as its whole value.)"""
        if namespace in self._namespaces_seen:
            return
        metrics.JOBS_SUCCEEDED.labels(self.kind, namespace)
        metrics.JOBS_RESTARTED.labels(self.kind, namespace)
        for phase in engine.TERMINAL:
            metrics.JOB_DURATION.labels(self.kind, namespace, phase)
        self._namespaces_seen.add(namespace)

    def accepted(self, job: Obj, kind: JobKind[Any], recorder: EventRecorder) -> None:
        """The Created Event and counter, and a Warning for fields stored but not acted on."""
        meta = job["metadata"]
        metrics.JOBS_CREATED.labels(self.kind, meta["namespace"]).inc()
        recorder.record(job, "Normal", "Created", f"{self.kind} {meta['name']} accepted")
        ignored = kind.fields_not_acted_on(job)
        if ignored:
            message = (
                f"{', '.join(ignored)}: stored as written, but this operator does not "
                "act on it yet; the job runs as if it were not set"
            )
            recorder.record(job, "Warning", "FieldNotActedOn", message)

    def restarted(self, namespace: str, count: int) -> None:
        if count:
            metrics.JOBS_RESTARTED.labels(self.kind, namespace).inc(count)

    def finished(self, job: Obj, plan: engine.Plan) -> None:
        """Count a job that has just finished, and log it (a failure with its reason)."""
        assert plan.finished is not None
        kind, ns = self.kind, job["metadata"]["namespace"]
        flog = log.bind(kind=kind, namespace=ns, name=job["metadata"]["name"])
        if plan.finished.phase == "Succeeded":
            metrics.JOBS_SUCCEEDED.labels(kind, ns).inc()
            flog.info("job succeeded", phase="Succeeded")
        else:
            metrics.JOBS_FAILED.labels(kind, ns, plan.finished.reason).inc()
            flog.warning(
                "job failed",
                phase=plan.finished.phase,
                reason=str(plan.finished.reason),
                message=plan.finished.message,
            )
        start = engine.parse_time(plan.status.get("startTime"))
        end = engine.parse_time(plan.status.get("completionTime"))
        if start and end:
            metrics.JOB_DURATION.labels(kind, ns, plan.finished.phase).observe(
                (end - start).total_seconds()
            )
