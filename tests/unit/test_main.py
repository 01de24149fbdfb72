"""Command-line flags and bind addresses."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator import registry
from t9k_operator.__main__ import (
    leader_election_options,
    may_watch_nodes,
    parse_args,
    reconcile_client_options,
    unserved,
)
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.integrations.kueue.integration import Kueue
from t9k_operator.kube import Forbidden, NotFound, ServerError
from t9k_operator.manager import parse_bind_address
from t9k_operator.reconcilers.pipeline.contract import Integration
from t9k_operator.runtime.leaderelection import LeaderElectionOptions


def test_defaults_follow_controller_runtime() -> None:
    args = parse_args([])
    assert args.metrics_bind_address == ":8080"
    assert args.health_probe_bind_address == ":8081"
    assert args.leader_elect is False
    assert args.concurrent_reconciles == 4


def test_pod_start_timeout_defaults_to_ten_minutes_and_zero_turns_it_off() -> None:
    assert parse_args([]).pod_start_timeout == 600.0
    assert parse_args(["--pod-start-timeout=0"]).pod_start_timeout == 0.0


def test_default_client_limit_is_the_api_servers() -> None:
    """No flag: the API server's priority and fairness paces the reconciles; a
    server without it, 50/100, not controller-runtime's 20/30: a job start is 7
    limited writes (README, the flag)."""
    args = parse_args([])
    options = reconcile_client_options(args, pool_size=8)
    assert (options.qps, options.burst, options.lift_limit_under_apf) == (50.0, 100, True)
    assert options.pool_size == 8
    assert (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    ) == (15.0, 10.0, 2.0)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--kube-api-qps=80"], (80.0, 100, False)),
        (["--kube-api-burst=300"], (50.0, 300, False)),
        (["--kube-api-qps=-1"], (-1.0, 100, False)),
    ],
)
def test_client_limit_set_by_flag_wins(argv: list[str], expected: tuple[float, int, bool]) -> None:
    """Either flag fixes the limit whatever the API server; -1 turns it off."""
    options = reconcile_client_options(parse_args(argv), pool_size=8)
    assert (options.qps, options.burst, options.lift_limit_under_apf) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["--concurrent-reconciles=0"],
        ["--kube-api-qps=0"],
        ["--kube-api-qps=-2"],
        ["--kube-api-burst=0"],
        ["--leader-elect-lease-duration=5", "--leader-elect-renew-deadline=10"],
        ["--log-level=loud"],
        ["--gang-scheduler=kube-batch"],
        ["--gang-scheduler-name=volcano"],  # a name without a gang scheduler
        ["--gang-unavailable=ignore"],
        ["--pod-start-timeout=-1"],
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


def gang_config(args: Any) -> GangScheduling:
    """The gang scheduling integration the flags configure (always on)."""
    (gang,) = [i for i in registry.configure(args) if isinstance(i, GangScheduling)]
    return gang


def not_served(client: Any, integration: Integration[Any]) -> str | None:
    return unserved(client, [integration])


def kueue_not_served(client: Any, integration: Integration[Any] | None) -> str | None:
    return unserved(client, [] if integration is None else [integration])


def test_gang_flags() -> None:
    plain = gang_config(parse_args([]))
    assert (plain.backend, plain.hold, plain.needs) == (None, False, ())
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
    assert not_served(_Discovery({}), GangScheduling()) is None


def test_kueue_whose_workload_api_is_not_served_is_refused_at_start() -> None:
    kueue = Kueue()
    served = _Discovery({"resources": [{"name": "workloads"}, {"name": "localqueues"}]})
    assert kueue_not_served(served, kueue) is None  # type: ignore[arg-type]
    for answer in ({"resources": [{"name": "localqueues"}]}, NotFound("404 page not found")):
        missing = kueue_not_served(_Discovery(answer), kueue)  # type: ignore[arg-type]
        assert missing is not None
        assert "/apis/kueue.x-k8s.io/v1beta2" in missing and "install Kueue v0.15" in missing
    assert kueue_not_served(_Discovery({}), registry.ServedKueue.from_flags(parse_args([]))) is None


def test_leader_election_flags_make_one_options_object() -> None:
    args = parse_args(
        [
            "--leader-election-namespace=ops",
            "--leader-election-id=lease",
            "--leader-elect-lease-duration=30",
            "--leader-elect-renew-deadline=20",
            "--leader-elect-retry-period=4",
        ]
    )
    assert leader_election_options(args) == LeaderElectionOptions(
        namespace="ops",
        lease_name="lease",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=4.0,
    )


class _Nodes:
    """A client whose list of nodes answers ``error`` (None: a list)."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def list(self, resource: Any, **_: Any) -> dict[str, Any]:
        assert resource.plural == "nodes"
        if self.error is not None:
            raise self.error
        return {"items": []}


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str, **_: Any) -> None:
        self.lines.append(message)

    warning = info


def test_nodes_are_watched_when_the_operator_may_list_them() -> None:
    log = _Log()
    assert may_watch_nodes(_Nodes(None), log) is True  # type: ignore[arg-type]
    assert log.lines == []
    # The API server in trouble is no answer: the informer will retry.
    assert may_watch_nodes(_Nodes(ServerError("down")), log) is True  # type: ignore[arg-type]


def test_a_namespaced_install_goes_on_without_nodes_and_says_so_once() -> None:
    log = _Log()
    assert may_watch_nodes(_Nodes(Forbidden("nodes is forbidden")), log) is False  # type: ignore[arg-type]
    (line,) = log.lines
    assert line.startswith("nodes not watched (no grant to list them)")
