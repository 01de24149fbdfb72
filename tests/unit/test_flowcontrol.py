"""Token bucket arithmetic (x/time/rate reservation semantics)."""

from __future__ import annotations

import pytest

from t9k_operator.foundation.flowcontrol import TokenBucket
from tests.fakes import FakeClock


def test_burst_then_spaced_reservations() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_refill_is_capped_at_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.step(100)
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.5)


def test_accept_sleeps_for_the_reservation() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=4, burst=1, clock=clock)
    start = clock.monotonic()
    bucket.accept()
    bucket.accept()
    assert clock.monotonic() - start == pytest.approx(0.25)


def test_accept_returns_the_seconds_it_waited() -> None:
    """What the API client reports as its limiter wait."""
    bucket = TokenBucket(qps=4, burst=1, clock=FakeClock())
    assert [bucket.accept() for _ in range(3)] == pytest.approx([0.0, 0.25, 0.25])


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_rejects_nonsense(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=qps, burst=burst)
