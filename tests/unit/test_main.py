"""Command-line flags and bind addresses."""

from __future__ import annotations

import pytest

from t9k_operator.__main__ import gang_config, parse_args
from t9k_operator.kube import NotFound
from t9k_operator.manager import parse_bind_address
from t9k_operator.reconcilers.gang import GangConfig, not_served
from t9k_operator.reconcilers.kueue import KueueConfig
from t9k_operator.reconcilers.kueue import not_served as kueue_not_served


def test_defaults_follow_controller_runtime() -> None:
    args = parse_args([])
    assert args.metrics_bind_address == ":8080"
    assert args.health_probe_bind_address == ":8081"
    assert args.leader_elect is False
    assert args.concurrent_reconciles == 4


def test_default_client_limit_is_chosen_for_job_starts() -> None:
    """50/100, not controller-runtime's 20/30: a job start is 7 limited writes,
    and the API server's priority and fairness protects it (README, the flag)."""
    args = parse_args([])
    assert (args.kube_api_qps, args.kube_api_burst) == (50.0, 100)
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
        ["--gang-scheduler=kube-batch"],
        ["--gang-scheduler-name=volcano"],  # a name without a gang scheduler
        ["--gang-unavailable=ignore"],
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


def test_gang_flags() -> None:
    assert gang_config(parse_args([])) == GangConfig()
    volcano = gang_config(parse_args(["--gang-scheduler=volcano"]))
    assert volcano.backend is not None and volcano.backend.scheduler_name == "volcano"
    assert volcano.resource is not None and volcano.resource.group == "scheduling.volcano.sh"
    named = gang_config(
        parse_args(
            ["--gang-scheduler=coscheduling", "--gang-scheduler-name=co", "--gang-unavailable=hold"]
        )
    )
    assert named.backend is not None and named.backend.scheduler_name == "co"
    assert named.hold


class _Discovery:
    def __init__(self, answer: dict[str, object] | Exception) -> None:
        self.answer = answer

    def request(self, method: str, path: str) -> dict[str, object]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_gang_scheduler_whose_api_is_not_served_is_refused_at_start() -> None:
    volcano = gang_config(parse_args(["--gang-scheduler=volcano"]))
    served = _Discovery({"resources": [{"name": "podgroups"}, {"name": "queues"}]})
    assert not_served(served, volcano) is None  # type: ignore[arg-type]
    missing = not_served(_Discovery(NotFound("404 page not found")), volcano)  # type: ignore[arg-type]
    assert missing is not None
    assert "/apis/scheduling.volcano.sh/v1beta1" in missing and "install" in missing
    assert not_served(_Discovery({}), GangConfig()) is None  # type: ignore[arg-type]


def test_kueue_whose_workload_api_is_not_served_is_refused_at_start() -> None:
    kueue = KueueConfig(enabled=True)
    served = _Discovery({"resources": [{"name": "workloads"}, {"name": "localqueues"}]})
    assert kueue_not_served(served, kueue) is None  # type: ignore[arg-type]
    for answer in ({"resources": [{"name": "localqueues"}]}, NotFound("404 page not found")):
        missing = kueue_not_served(_Discovery(answer), kueue)  # type: ignore[arg-type]
        assert missing is not None
        assert "/apis/kueue.x-k8s.io/v1beta1" in missing and "install Kueue" in missing
    assert kueue_not_served(_Discovery({}), KueueConfig()) is None  # type: ignore[arg-type]
