"""``t9k console``: a command of ``t9k``; where it watches (the namespaces the
user may read, the kinds the cluster serves); where it listens and what URL it
prints."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from t9k_operator import kube
from t9k_operator.cli.commands import build_parser
from t9k_operator.console import serve
from t9k_operator.console.board import JobBoard
from t9k_operator.console.watch import ALL_NAMESPACES, readable_scope, watch_jobs
from t9k_operator.kinds.registry import KINDS
from t9k_operator.resources import PODS


def test_console_is_a_t9k_command_on_loopback_by_default() -> None:
    args = build_parser().parse_args(["console", "--no-browser"])
    assert (args.subcommand, serve.address_of(args), args.port, args.no_browser) == (
        "console",
        "127.0.0.1",
        None,
        True,
    )
    in_cluster = build_parser().parse_args(["console", "--in-cluster"])
    assert serve.address_of(in_cluster) == "0.0.0.0"
    args = build_parser().parse_args(["console", "--address", "0.0.0.0", "--port", "9000"])
    assert (args.address, args.port, args.no_browser) == ("0.0.0.0", 9000, False)


class FakeKube:
    """Lists as a user who may read jobs in team-a only, on a cluster without MSJob."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []

    def list(self, resource: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        self.asked.append((resource.plural, namespace))
        if resource.kind == "MSJob":
            raise kube.NotFound("the server could not find the requested resource")
        if resource == PODS:
            return {"items": []}
        if namespace != "team-a":
            raise kube.Forbidden("cannot list at the cluster scope")
        return {"items": []}


def test_each_kind_is_watched_where_the_user_may_read_it() -> None:
    fake = FakeKube()
    watches = watch_jobs(fake, JobBoard(), "team-a")  # type: ignore[arg-type]
    served = [k.crd.kind for k in KINDS if k.crd.kind != "MSJob"]
    assert watches.kinds == served
    assert {s for scopes in watches.scopes.values() for s in scopes} == {"team-a"}
    assert len(watches.informers) == len(served) + 1  # and the jobs' pods, cluster-wide
    assert readable_scope(fake, PODS, "team-a") == ALL_NAMESPACES  # type: ignore[arg-type]


def test_nothing_readable_is_not_watched() -> None:
    class Refusing(FakeKube):
        def list(self, resource: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
            raise kube.Forbidden("no")

    watches = watch_jobs(Refusing(), JobBoard(), "team-a")  # type: ignore[arg-type]
    assert (watches.kinds, watches.informers) == ([], [])


def test_the_url_carries_the_token_and_a_host_the_browser_reaches() -> None:
    assert serve.url_of("127.0.0.1", 8890, "abc") == "http://127.0.0.1:8890/?token=abc"
    assert serve.url_of("0.0.0.0", 8890, "abc") == "http://127.0.0.1:8890/?token=abc"
    assert serve.url_of("::1", 9000, "abc") == "http://[::1]:9000/?token=abc"
    assert serve.allowed_hosts("0.0.0.0") is None
    assert "localhost" in (serve.allowed_hosts("127.0.0.1") or [])


def test_a_taken_default_port_falls_back_to_a_free_one(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    monkeypatch.setattr(serve, "DEFAULT_PORT", taken.getsockname()[1])
    sock = serve.listen("127.0.0.1", None)
    try:
        assert sock.getsockname()[1] not in (0, serve.DEFAULT_PORT)
        with pytest.raises(OSError):
            serve.listen("127.0.0.1", serve.DEFAULT_PORT)  # asked for: never another
    finally:
        sock.close()
        taken.close()
