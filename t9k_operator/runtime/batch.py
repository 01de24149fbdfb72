"""Slow-start batches: many independent writes in parallel, stopping at the first error.

The Kubernetes Job controller creates a job's pods this way
(``slowStartBatch``): a batch of 1, then 2, 4, 8, ... run in parallel, each
batch finishing before the next begins; a batch that sees an error ends the
run, so a namespace out of quota or an admission webhook refusing every pod
costs one or two requests, never the whole list. Here the batches also never
exceed ``max_parallel`` (threads are the cost of a batch in Python).

The caller decides what to run: nothing is retried, nothing is run twice, and
items after the failing batch are not run at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class BatchOutcome(Generic[T, R]):
    """What a slow-start run did: the results of the items that succeeded (in
    the items' order), and the first failure (its item and exception), if any."""

    done: list[tuple[T, R]] = field(default_factory=list)
    failed: tuple[T, BaseException] | None = None
    batches: list[int] = field(default_factory=list)  # the sizes run, for tests and logs


def slow_start(
    items: Sequence[T],
    fn: Callable[[T], R],
    executor: Executor | None,
    *,
    initial: int = 1,
    max_parallel: int = 16,
) -> BatchOutcome[T, R]:
    """Run ``fn`` on every item in batches of ``initial``, then twice the last
    (at most ``max_parallel``), a batch's items in parallel on ``executor``
    (in the calling thread when it is None or a batch has one item). After a
    batch in which any item raised, no further batch starts; the batch's other
    items have run (they were in flight) and are reported as done or failed."""
    if initial < 1 or max_parallel < 1:
        raise ValueError("initial and max_parallel must be >= 1")
    out: BatchOutcome[T, R] = BatchOutcome()
    start, size = 0, min(initial, max_parallel)
    while start < len(items):
        batch = items[start : start + size]
        out.batches.append(len(batch))
        results: list[tuple[T, R | None, BaseException | None]] = []
        if executor is None or len(batch) == 1:
            for item in batch:
                try:
                    results.append((item, fn(item), None))
                except Exception as exc:
                    results.append((item, None, exc))
        else:
            futures = [(item, executor.submit(fn, item)) for item in batch]
            for item, future in futures:
                error = future.exception()
                results.append((item, None if error else future.result(), error))
        for item, result, error in results:
            if error is not None:
                if out.failed is None:
                    out.failed = (item, error)
            else:
                out.done.append((item, result))  # type: ignore[arg-type]
        if out.failed is not None:
            return out
        start += len(batch)
        size = min(2 * size, max_parallel)
    return out
