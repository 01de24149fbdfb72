"""The integration contract, proven by a toy: one class and one registry line,
and every hook reaches the job through the apply step and the engine, which
never name it.

The toy stands for a queueing system of the simplest kind: a job waits, with
no pods, until a cluster-scoped Ticket named after it exists; it then gets a
Toy child (its claim), its pods carry the ticket's number, its status says
which ticket it holds, and it gives the claim back when it finishes or pauses.
It states the RBAC rules it needs, and runs a server of its own (a counter of
the calls it took), which its observe reads through the caches.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog.testing
import yaml

from t9k_operator import registry
from t9k_operator.__main__ import parse_args
from t9k_operator.builders.common import child_metadata, job_labels
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.kinds.registry import KINDS
from t9k_operator.kinds.view import Gate, Hold, JobView
from t9k_operator.manager import Manager, ManagerOptions
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.controllers import build_controllers
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    Event,
    JobInput,
    Rule,
    Templates,
    Watch,
)
from t9k_operator.reconcilers.serving import Host
from t9k_operator.resources import Resource
from t9k_operator.runtime.controller import ControllerContext, Server
from tests import hack_scripts
from tests.fakes import FakeRecorder
from tests.kinds import KIND_NAMES
from tests.unit.reconcilers.fake_kube import FakeKube
from tests.unit.reconcilers.test_job_reconciler import JOBS, Harness

ROOT = Path(__file__).resolve().parents[3]
TICKETS = Resource("toy.example", "v1", "tickets", "Ticket", namespaced=False)
TOYS = Resource("toy.example", "v1", "toys", "Toy")


@dataclass(frozen=True)
class ToyState:
    ticket: Obj | None
    claim: Obj | None
    want: Obj
    calls: int | None = None  # what its server took, when it serves


class ToyServer:
    """The toy's server: it counts the calls it takes (none here)."""

    def __init__(self) -> None:
        self.calls, self.started, self.stopped = 0, 0, 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        self.stopped += 1


class Toy(Base[ToyState]):
    name = "toy"

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--toy", action="store_true", help="queue jobs with the toy")

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        return None

    @staticmethod
    def from_flags(args: argparse.Namespace) -> Toy | None:
        return Toy() if args.toy else None

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return (
            Rule(("toy.example",), ("tickets",), ("list", "watch"), why="The toy's tickets."),
            Rule(("toy.example",), ("toys",), ("get", "list", "watch", "create", "delete")),
            Rule(
                ("toy.example",),
                ("counters",),
                ("get",),
                resource_names=("its-counter",),
                own_namespace=True,
            ),
        )

    def servers(self, host: Host) -> list[Server]:
        server = ToyServer()
        host.provide(self.name, server)
        return [server]

    def watches(self) -> tuple[Watch, ...]:
        return (Watch(TOYS, owned=True), Watch(TICKETS))

    def observe(self, job: JobInput, caches: Caches) -> tuple[ToyState, JobView]:
        view = job.view
        ticket = caches.get(TICKETS, None, view.name)
        claim = caches.get(TOYS, view.namespace, f"{view.name}-claim")
        want = {
            "apiVersion": TOYS.api_version,
            "kind": "Toy",
            "metadata": child_metadata(
                job.job, f"{view.name}-claim", job_labels(view.kind, view.name)
            ),
        }
        server = caches.source(self.name)
        calls = server.calls if isinstance(server, ToyServer) else None
        return ToyState(ticket, claim, want, calls), view

    def gate(self, state: ToyState, view: JobView) -> Gate | None:
        if state.ticket is not None:
            return None
        message = f"waiting for a ticket named {view.name}"
        return Gate("WaitingForTicket", message, Hold.ALL, event=message)

    def children(
        self, state: ToyState, view: JobView, templates: Templates, pods: int
    ) -> list[Action]:
        if state.ticket is None or state.claim is not None:
            return []
        return [Action("create", TOYS, state.want, "the job's Toy")]

    def release(self, state: ToyState, view: JobView) -> list[Action]:
        return [] if state.claim is None else [Action("delete", TOYS, state.claim, "the job's Toy")]

    def decorate(self, state: ToyState, view: JobView, pod: Obj) -> None:
        assert state.ticket is not None, "no pod is built while the gate holds"
        pod["metadata"].setdefault("labels", {})["toy.example/ticket"] = str(state.ticket["number"])

    def status(self, state: ToyState, view: JobView, status: Obj) -> list[Event]:
        if state.ticket is not None:
            status["toy"] = {"ticket": state.ticket["number"]}
            if state.calls is not None:
                status["toy"]["calls"] = state.calls
        return []


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The toy listed in the registry (its one line), and the flags that turn it on."""
    monkeypatch.setattr(registry, "INTEGRATIONS", (*registry.INTEGRATIONS, Toy))
    return registry.configure(parse_args(["--toy"]))


def harness(
    kind: str, integrations: tuple[Any, ...], sources: dict[str, object] | None = None
) -> Harness:
    h = Harness(kind, integrations=integrations, sources=sources)
    h.children.append(TOYS)
    h.watched.append((TICKETS, None))
    return h


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_registered_integration_gates_decorates_adds_children_status_and_releases(
    kind: str, toy_registered: tuple[Any, ...]
) -> None:
    assert [type(i) for i in toy_registered][-1] is Toy, "configured from its own flag"
    h = harness(kind, toy_registered)
    h.run()
    assert h.pod_names() == [], "the gate holds every pod back"
    assert h.fake.of_kind("Toy") == []
    status = h.job()["status"]
    conditions = {c["type"]: c for c in status.get("t9kConditions") or status["conditions"]}
    assert conditions["Running"]["reason"] == "WaitingForTicket"
    assert "WaitingForTicket" in h.recorder.reasons()
    assert status["phase"] == "Pending" and "toy" not in status

    h.fake.put(TICKETS, {"metadata": {"name": "j"}, "number": 7})
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    assert all(p["metadata"]["labels"]["toy.example/ticket"] == "7" for p in h.fake.of_kind("Pod"))
    (claim,) = h.fake.of_kind("Toy")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == h.job()["metadata"]["uid"]
    assert h.job()["status"]["toy"] == {"ticket": 7}

    for (k, _, _), obj in h.fake.objects.items():
        if k == "Pod":
            obj["status"] = {"phase": "Succeeded"}
    h.run()
    assert h.job()["status"]["phase"] == "Succeeded"
    assert h.fake.of_kind("Toy") == [], "given back once the job has finished"


def test_without_its_flag_the_toy_is_off(toy_registered: tuple[Any, ...]) -> None:
    assert Toy not in [type(i) for i in registry.configure(parse_args([]))]
    h = harness("PyTorchTrainingJob", registry.configure(parse_args([])))
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2], "nothing gates the job"


def test_every_integration_in_the_registry_is_configured_from_its_own_flags() -> None:
    """Each listed integration adds its flags and reads them back; the default
    flags turn on exactly those that need no flag (gang scheduling's warnings,
    the job's TensorBoard)."""
    parser = argparse.ArgumentParser()
    registry.add_flags(parser)
    defaults = {type(i) for i in registry.configure(parser.parse_args([]))}
    assert defaults < set(registry.INTEGRATIONS)
    everything = registry.configure(
        parse_args(
            [
                "--kueue",
                "--gang-scheduler=volcano",
                "--prometheus-url=http://prometheus:9090",
                "--notifications",
            ]
        )
    )
    assert [type(i) for i in everything] == list(registry.INTEGRATIONS)
    for integration in everything:
        assert integration.name and integration.watches() is not None


def every_integration_on() -> tuple[Any, ...]:
    """Each integration in the registry, configured on (its flags set)."""
    on = registry.configure(
        parse_args(
            [
                "--kueue",
                f"--gang-scheduler={gang.BACKENDS[0]}",
                "--prometheus-url=http://p:9090",
                "--notifications",
            ]
        )
    )
    assert {type(i) for i in on} == set(registry.INTEGRATIONS), "every one has a flag set here"
    return on


def test_the_cluster_role_grants_what_every_integration_reads_and_its_needed_apis() -> None:
    """What an integration caches is listed and watched under the shipped
    ClusterRole; a new integration fails here until its Setup's rbac() grants it."""
    rules = yaml.safe_load((ROOT / "manifests" / "rbac" / "20-cluster-role.yaml").read_text())
    granted = {
        (group, resource, verb)
        for rule in rules["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    integrations = list(every_integration_on())
    integrations += [GangScheduling(gang.backend(name)) for name in gang.BACKENDS]
    for integration in integrations:
        for watch in integration.watches():
            for verb in ("list", "watch"):
                key = (watch.resource.group, watch.resource.plural, verb)
                assert key in granted, f"{integration.name}: {key} is not granted"
            if watch.owned:
                key = (watch.resource.group, watch.resource.plural, "create")
                assert key in granted, f"{integration.name}: its children's create is not granted"


def test_a_registered_integrations_rules_are_in_the_generated_rbac(
    toy_registered: tuple[Any, ...],
) -> None:
    """hack/generate/rbac.py lays out what the registry's integrations state, the
    toy's too: its cluster rules in the ClusterRole (after the known ones),
    its rules in the operator's namespace in a Role of its own."""
    gen = hack_scripts.load("generate.rbac")
    role = yaml.safe_load(gen.render())
    toy = [r for r in role["rules"] if r["apiGroups"] == ["toy.example"]]
    assert toy == [
        {"apiGroups": ["toy.example"], "resources": ["tickets"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["toy.example"],
            "resources": ["toys"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
    ]
    assert role["rules"][-2:] == toy, "an integration the layout does not name goes last"
    assert '# The toy\'s tickets.\n- apiGroups: ["toy.example"]' in gen.render()
    roles = gen.render_roles(registry.rbac())
    role_file = ROOT / "manifests" / "rbac" / "50-toy-role.yaml"
    own, binding = yaml.safe_load_all(roles[role_file])
    assert (own["kind"], own["metadata"]["name"]) == ("Role", "t9k-operator-toy")
    assert own["rules"] == [
        {
            "apiGroups": ["toy.example"],
            "resources": ["counters"],
            "resourceNames": ["its-counter"],
            "verbs": ["get"],
        }
    ]
    assert binding["roleRef"]["name"] == "t9k-operator-toy"
    # Without it, the files are the committed ones.
    assert ROOT / "manifests" / "rbac" / "50-progress-role.yaml" in roles


def test_a_registered_integrations_server_starts_through_its_hook(
    toy_registered: tuple[Any, ...],
) -> None:
    """The manager starts the toy's server, which no wiring names;
    what the server provides reaches the job reconcilers' caches."""
    fake = FakeKube()
    options = ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0")
    toy = [i for i in toy_registered if isinstance(i, Toy)]  # the only one serving here
    manager = Manager(
        fake,  # type: ignore[arg-type]
        options,
        functools.partial(build_controllers, integrations=toy),
    )
    (server,) = manager.extra_servers
    assert isinstance(server, ToyServer) and server.started == 0
    manager._start_servers()
    assert server.started == 1
    assert len(manager.controllers) == len(KINDS)  # no TensorBoard integration
    for controller in manager.controllers[: len(KIND_NAMES)]:
        reconciler = controller._reconcile.__self__  # type: ignore[attr-defined]
        assert reconciler.caches.source("toy") is server


class BrokenToy(Toy):
    def servers(self, host: Host) -> list[Server]:
        raise OSError("address already in use")


def test_a_server_that_cannot_be_built_leaves_the_jobs_running_without_it() -> None:
    fake = FakeKube()
    ctx = ControllerContext(
        client=fake,  # type: ignore[arg-type]
        informers=InformerFactory(fake),  # type: ignore[arg-type]
        recorder=FakeRecorder(),  # type: ignore[arg-type]
        workers=1,
    )
    with structlog.testing.capture_logs() as logs:
        controllers = build_controllers(ctx, [BrokenToy()])
    assert len(controllers) == len(
        KINDS
    )  # one per kind: no TensorBoard integration and ctx.servers == []
    (logged,) = [e for e in logs if e["log_level"] == "error"]
    assert logged["integration"] == "toy" and "address already in use" in logged["error"]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_what_a_server_provides_reaches_the_integrations_part_of_the_status(
    kind: str, toy_registered: tuple[Any, ...]
) -> None:
    server = ToyServer()
    server.calls = 3
    h = harness(kind, toy_registered, {"toy": server})
    h.fake.put(TICKETS, {"metadata": {"name": "j"}, "number": 7})
    h.run()
    assert h.job()["status"]["toy"] == {"ticket": 7, "calls": 3}
