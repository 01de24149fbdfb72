"""Tests for t9k_operator.runtime.ratelimit: client-go's rate limiters."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from t9k_operator.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from tests.fakes import FakeClock, StubLimiter


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.mark.parametrize(
    ("previous_failures", "expected"),
    [
        (0, 0.005),
        (1, 0.01),
        (2, 0.02),
        (3, 0.04),
        (10, 5.12),
        (17, 655.36),
        (18, 1000.0),  # 1310.72 capped
        (2000, 1000.0),  # 2**2000 overflows a float: still capped, no error
    ],
)
def test_exponential_backoff_arithmetic(previous_failures: int, expected: float) -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    for _ in range(previous_failures):
        rl.when("a")
    assert rl.num_requeues("a") == previous_failures
    assert rl.when("a") == expected
    assert rl.num_requeues("a") == previous_failures + 1


def test_exponential_backoff_sequence_and_custom_params() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1.0, 10.0)
    assert [rl.when("a") for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    huge: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1e300, 5.0)
    assert [huge.when("a") for _ in range(30)][-1] == 5.0  # 1e300*2**29 is inf -> cap


def test_exponential_failures_are_per_item_and_forget_resets() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    assert rl.when("a") == 0.005
    assert rl.when("a") == 0.01
    assert rl.when("b") == 0.005
    assert (rl.num_requeues("a"), rl.num_requeues("b"), rl.num_requeues("c")) == (2, 1, 0)
    rl.forget("a")
    rl.forget("never-seen")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005
    assert rl.num_requeues("b") == 1


def test_bucket_first_burst_immediate_then_spaced_by_one_over_qps(clock: FakeClock) -> None:
    rl = BucketRateLimiter(qps=10, burst=100, clock=clock)
    delays = [rl.when(i) for i in range(105)]
    assert delays[:100] == [0.0] * 100
    assert delays[100:] == [0.1, 0.2, 0.3, 0.4, 0.5]
    # Five tokens booked ahead; after 0.6 s one more is free again.
    clock.step(0.6)
    assert rl.when("x") == 0.0
    assert rl.when("y") == pytest.approx(0.1)
    assert rl.num_requeues("x") == 0
    rl.forget("x")
    assert rl.num_requeues("x") == 0


def test_bucket_defaults(clock: FakeClock) -> None:
    rl = BucketRateLimiter(clock=clock)
    assert (rl.bucket.qps, rl.bucket.burst) == (10.0, 100)


@pytest.mark.parametrize(
    ("specs", "expected_when", "expected_requeues"),
    [
        ([(1.0, 0)], 1.0, 0),
        ([(1.0, 5), (3.0, 2)], 3.0, 5),
        ([(0.0, 1), (0.5, 7), (0.25, 3)], 0.5, 7),
    ],
)
def test_max_of_takes_max_and_fans_out(
    specs: list[tuple[float, int]], expected_when: float, expected_requeues: int
) -> None:
    stubs = [StubLimiter(d, r) for d, r in specs]
    rl: MaxOfRateLimiter[Hashable] = MaxOfRateLimiter(*stubs)
    assert rl.when("a") == expected_when
    assert rl.num_requeues("a") == expected_requeues
    rl.forget("a")
    for s in stubs:
        assert s.calls == [("when", "a"), ("forget", "a")], "every limiter sees every call"


def test_max_of_requires_a_limiter() -> None:
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter(clock: FakeClock) -> None:
    rl = default_controller_rate_limiter(clock)
    # Per-item backoff dominates while the bucket has tokens...
    assert rl.when("a") == 0.005
    assert rl.when("a") == 0.01
    assert rl.num_requeues("a") == 2
    for i in range(98):
        assert rl.when(i) == 0.005
    # ...then the 10 qps bucket does.
    assert rl.when("b") == 0.1
    assert rl.when("c") == 0.2
    rl.forget("a")
    assert rl.num_requeues("a") == 0
