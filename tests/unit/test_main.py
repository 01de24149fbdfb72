"""Command-line flags and bind addresses."""

from __future__ import annotations

import pytest

from t9k_operator.__main__ import parse_args
from t9k_operator.manager import parse_bind_address


def test_defaults_follow_controller_runtime() -> None:
    args = parse_args([])
    assert args.metrics_bind_address == ":8080"
    assert args.health_probe_bind_address == ":8081"
    assert args.leader_elect is False
    assert args.concurrent_reconciles == 4
    assert (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    ) == (15.0, 10.0, 2.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["--concurrent-reconciles=0"],
        ["--kube-api-qps=0"],
        ["--kube-api-burst=0"],
        ["--leader-elect-lease-duration=5", "--leader-elect-renew-deadline=10"],
        ["--log-level=loud"],
    ],
)
def test_bad_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (":8080", ("0.0.0.0", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("0", None),
        ("", None),
    ],
)
def test_bind_address(value: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(value) == expected


def test_bind_address_without_port_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_bind_address("localhost")
