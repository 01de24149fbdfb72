"""Unit tests for t9k_operator.informers.backoff."""

from __future__ import annotations

import random
from typing import Any

import pytest

from t9k_operator.informers.backoff import Backoff


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        (Backoff(jitter=0), [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]),
        (Backoff(initial=1, cap=4, factor=3, jitter=0), [1, 3, 4, 4]),
    ],
)
def test_backoff_sequence_is_capped(backoff: Backoff, expected: list[float]) -> None:
    assert [backoff.next() for _ in expected] == pytest.approx(expected)
    backoff.reset()
    assert backoff.next() == pytest.approx(expected[0])


def test_backoff_jitter_stays_within_bounds() -> None:
    backoff = Backoff(rng=random.Random(3))
    delays = [backoff.next() for _ in range(200)]
    assert all(0.8 <= d <= 30 * 1.2 for d in delays)
    assert len({round(d, 6) for d in delays[-50:]}) > 1  # jittered, not a fixed 30


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 2, "cap": 1}, {"factor": 0.5}, {"jitter": -1}]
)
def test_backoff_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)
