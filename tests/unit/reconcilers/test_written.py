"""Whether the cache shows the operator's own status write, without reading an
order into resourceVersions (the API documents them as opaque)."""

from __future__ import annotations

from t9k_operator.reconcilers.job import Written


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
