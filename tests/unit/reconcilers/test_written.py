"""Whether the cache shows the operator's own status write, without reading an
order into resourceVersions (the API documents them as opaque); and the
refusals a pass keeps for the job's next pass."""

from __future__ import annotations

import itertools
import sys
import threading

from t9k_operator.reconcilers.pipeline.plan import Problem, Recorded
from t9k_operator.reconcilers.pipeline.writes import Refusals, Written, WrittenStatuses


def job(rv: str, phase: str, generation: int = 1) -> dict[str, object]:
    return {
        "metadata": {"resourceVersion": rv, "generation": generation},
        "status": {"phase": phase, "restartCount": 1},
    }


def test_opaque_versions_older_cache_waits_newer_cache_goes() -> None:
    written = Written(job("b7f1", "Running"))
    assert written.seen_in(job("b7f1", "Running"))  # the very write
    assert not written.seen_in(job("a9c3", "Pending"))  # the cache predates it
    # A later version (a spec change by the user) carrying our status.
    assert written.seen_in(job("zz01", "Running", generation=2))


def test_integer_looking_versions_are_not_compared_as_numbers() -> None:
    written = Written(job("100", "Running"))
    # "99" < "100" as integers, yet this object already holds our status.
    assert written.seen_in(job("99", "Running"))
    assert not written.seen_in(job("1000", "Pending"))


def test_a_write_is_forgotten_once_the_cache_shows_it() -> None:
    writes = WrittenStatuses()
    writes.remember("ns/a", job("7", "Running"))
    assert writes.awaited("ns/a", job("6", "Pending"))  # the cache predates it
    assert len(writes) == 1
    assert not writes.awaited("ns/a", job("7", "Running"))
    # Nothing is kept per job once the cache has caught up.
    assert len(writes) == 0
    assert not writes.awaited("ns/a", job("6", "Pending"))


def test_workers_sharing_it_while_writes_expire_never_see_an_error() -> None:
    """The controller's workers remember and check writes at once while old
    ones expire. A bare TTLCache shared this way raised KeyError out of its
    expiry in a 1000-job benchmark run."""
    clock = itertools.count()  # every reading of the time is a step later: constant expiry
    writes = WrittenStatuses(ttl=50, timer=lambda: float(next(clock)))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(4000):
                key = f"ns/job-{(n * 7919 + i) % 997}"
                writes.remember(key, job(str(i), "Running"))
                writes.awaited(key, job(str(i + 1), "Pending"))
                if i % 5 == 0:
                    writes.forget(key)
        except BaseException as exc:  # any error fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


def test_a_hold_stays_until_its_backoff_is_due_and_the_backoff_doubles() -> None:
    now = [100.0]
    refusals = Refusals(clock=lambda: now[0])
    held = Recorded(Problem("FailedCreate", "exceeded quota", fail=False))
    refusals.record("ns/a", held)
    assert refusals.take("ns/b") == Recorded(), "another job's pass finds nothing"
    assert refusals.due_in("ns/b") is None
    # Every pass within the first second plans from the hold again.
    assert refusals.take("ns/a") == held and refusals.take("ns/a") == held
    assert refusals.due_in("ns/a") == 1.0
    now[0] = 101.0
    assert refusals.take("ns/a") == Recorded(), "due: this pass tries again"
    assert refusals.due_in("ns/a") is None
    refusals.record("ns/a", held)  # refused again: twice the wait
    assert refusals.due_in("ns/a") == 2.0
    now[0] = 102.5
    assert refusals.take("ns/a") == held
    refusals.forget("ns/a")  # the job was deleted
    assert len(refusals) == 0 and refusals.take("ns/a") == Recorded()


def test_a_failure_is_taken_once_by_the_next_pass_of_its_job() -> None:
    refusals = Refusals(clock=lambda: 0.0)
    failed = Recorded(Problem("InvalidSpec", "spec.x: bad", fail=True))
    refusals.record("ns/a", failed)
    assert refusals.due_in("ns/a") is None
    assert refusals.take("ns/a") == failed
    assert refusals.take("ns/a") == Recorded() and len(refusals) == 0
