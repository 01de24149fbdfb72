"""A GenericJob's replicas, as the operator renders them, run for real on the
pod host (tests/integration/podhost): a server replica and two client
replicas in plain Debian ``python3`` meet over the addresses the operator
filled in (``$(service.server[0].host):$(service.port[msg])``), each
replica's Service being a name cluster DNS answers; kubelet's own
``$(NAME)`` references and its ``$$`` escape in the same fields still work
as kubelet does them. The replicas' exits, read by the kind's rules, decide
the job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders.common import NORMAL
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.registry import by_kind
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK

KIND = by_kind("GenericJob")
PYTHON = "/usr/bin/python3"  # Debian's, as a plain debian image has it

SERVER = """
import socket, sys
port, clients = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port))
s.listen()
heard = []
while len(heard) < clients:
    conn, _ = s.accept()
    message = conn.recv(1024).decode()
    heard.append(message)
    conn.sendall(("ack " + message).encode())
    conn.close()
print("server heard:", " | ".join(sorted(heard)), flush=True)
"""

CLIENT = """
import socket, sys, time
host, port, message, literal = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
deadline = time.monotonic() + 30
while True:
    try:
        conn = socket.create_connection((host, port), timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
conn.sendall(message.encode())
print("client got:", conn.recv(1024).decode(), "| literal:", literal, flush=True)
"""


def job_raw() -> dict[str, Any]:
    def template(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"name": "main", "image": "debian:12", "command": command}
        c["env"] = [{"name": k, "value": v} for k, v in (env or {}).items()]
        return {"spec": {"containers": [c]}}

    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": "gj", "namespace": "ns", "uid": "uid-gj"},
        "spec": {
            "successRules": [{"server": [0]}],
            "failureRules": [{"server": [0]}],
            "service": {"ports": [{"name": "msg", "port": 5000}]},
            "replicaSpecs": [
                {
                    "type": "server",
                    "template": template(
                        [PYTHON, "-c", SERVER, "$(service.port[msg])", "$(replicas[client])"]
                    ),
                },
                {
                    "type": "client",
                    "replicas": 2,
                    "template": template(
                        [
                            PYTHON,
                            "-c",
                            CLIENT,
                            "$(service.server[0].host)",
                            "$(SERVER_PORT)",
                            "$(GREETING) from $(type)-$(rank) of $(replicas[client])",
                            "$$(rank)",
                        ],
                        {"GREETING": "hello", "SERVER_PORT": "$(service.port[msg])"},
                    ),
                },
            ],
        },
    }


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.close()


def test_replicas_meet_over_the_substituted_addresses(node: Node) -> None:
    parsed = read(KIND, job_raw())
    job, view = parsed.job, parsed.view
    assert job is not None and view.spec_error is None
    for child in KIND.extras(job):  # the job's Services: cluster DNS answers their names
        node.add(child)
    pods = {
        (role.type, i): node.run_pod(KIND.build_pod(job, role.type, i, NORMAL, {}), STOCK)
        for role in view.roles
        for i in range(role.replicas)
    }
    codes = {key: run.wait("main", 60) for key, run in pods.items()}
    logs = {key: run.logs("main") for key, run in pods.items()}
    assert codes == {("server", 0): 0, ("client", 0): 0, ("client", 1): 0}, logs
    assert (
        "server heard: hello from client-0 of 2 | hello from client-1 of 2" in logs[("server", 0)]
    ), logs
    for i in (0, 1):
        # kubelet expanded $(GREETING) and $(SERVER_PORT); $$(rank) reached it as text.
        assert (
            f"client got: ack hello from client-{i} of 2 | literal: $(rank)" in logs[("client", i)]
        ), logs
    states = {
        key: ReplicaState(f"gj-{key[0]}-{key[1]}", f"u{key}", "Succeeded", exit_code=0)
        for key in pods
    }
    outcome = KIND.outcome(view, states)
    assert outcome is not None and outcome.phase == "Succeeded"
    assert "server-0" in outcome.message
