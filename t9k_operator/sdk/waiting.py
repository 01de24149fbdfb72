"""Waiting for a job to reach a state (:meth:`Client.wait
<t9k_operator.sdk.client.Client.wait>`): the job read again every interval,
judged by its phase, until it is there, has failed, or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from t9k_operator.sdk import views
from t9k_operator.sdk.errors import BadJob, JobFailed, WaitTimeout

WAIT_STATES = ("Running", "Succeeded", "Finished", "Paused")
Obj = dict[str, Any]


def wait_for(
    fetch: Callable[[], Obj],
    name: str,
    until: str,
    *,
    timeout: float | None,
    interval: float,
    progress: Callable[[Obj], None] | None,
) -> Obj:
    """The job ``fetch`` reads once it is ``until``; :class:`JobFailed` when it
    fails (unless ``Finished`` was wanted) or succeeds without being ``until``,
    :class:`WaitTimeout` when ``timeout`` passes. ``progress`` sees the job each
    time its phase or reason changes."""
    if until not in WAIT_STATES:
        raise BadJob(f"cannot wait for {until!r}: one of {', '.join(WAIT_STATES)}")
    deadline = None if timeout is None else time.monotonic() + timeout
    seen: tuple[str, str] | None = None
    while True:
        job = fetch()
        phase, why = views.phase(job), views.reason(job)
        if progress is not None and (phase, why) != seen:
            progress(job)
        seen = (phase, why)
        if phase == until or (until == "Finished" and phase in views.FINISHED):
            return job
        if until == "Running" and phase == "Succeeded":
            return job
        if phase == "Failed":
            raise JobFailed(name, why or "Failed", views.message(job))
        if until != "Finished" and phase == "Succeeded":
            raise JobFailed(name, "Succeeded", f"the job finished without being {until}")
        if deadline is not None and time.monotonic() >= deadline:
            raise WaitTimeout(name, until, phase, why, float(timeout or 0))
        time.sleep(
            interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0))
        )
