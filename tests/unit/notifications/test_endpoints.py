"""Who sends where: the administrator's defaults, a namespace's defaults, the
endpoints a job names instead, and what is wrong with them (written out)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.integrations.notifications.annotations import choice
from t9k_operator.integrations.notifications.integration import endpoints
from t9k_operator.integrations.notifications.record import Outcome

DEFAULT = {"notifications.tensorstack.dev/default": "true"}


def secret(ns: str, name: str, labels: Mapping[str, str] = {}, **data: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


class Directory:
    namespace: str | None = "t9k-system"

    def __init__(self, *secrets: dict[str, Any]) -> None:
        self.all = secrets

    def secrets(self, namespace: str) -> Sequence[dict[str, Any]]:
        return [s for s in self.all if s["metadata"]["namespace"] == namespace]

    def outcomes(self, uid: str) -> Mapping[str, Mapping[str, Outcome]]:
        return {}


DIRECTORY = Directory(
    secret("t9k-system", "ops", DEFAULT, type="slack", url="https://ops.example/x"),
    secret("t9k-system", "ops-private", type="slack", url="https://ops.example/y"),
    secret("team", "team-chat", DEFAULT, type="wecom", url="https://qy.example/x"),
    secret("team", "alice", type="webhook", url="https://alice.example/x", secret="k"),
    secret("team", "broken", type="webhook", url="https://b.example/x"),
    secret("other", "theirs", type="slack", url="https://other.example/x"),
)


def refs(found: Any) -> list[str]:
    return [ep.ref for ep in found]


def test_a_job_naming_none_gets_the_administrators_and_its_namespaces_defaults() -> None:
    found, problems = endpoints(DIRECTORY, "team", choice({}))
    assert refs(found) == ["t9k-system/ops", "team/team-chat"]
    assert problems == ("endpoint team/broken: a webhook needs key secret, the HMAC key its "
                        "messages are signed with",)  # fmt: skip


def test_a_job_naming_endpoints_gets_those_instead_of_its_namespaces_defaults() -> None:
    found, problems = endpoints(
        DIRECTORY, "team", choice({"notifications.tensorstack.dev/to": "alice"})
    )
    assert refs(found) == ["t9k-system/ops", "team/alice"]
    assert problems == ()


def test_a_job_names_only_its_own_namespaces_endpoints() -> None:
    found, problems = endpoints(
        DIRECTORY,
        "team",
        choice({"notifications.tensorstack.dev/to": "theirs,ops-private,broken"}),
    )
    assert refs(found) == ["t9k-system/ops"]
    assert problems == (
        "annotation notifications.tensorstack.dev/to: no endpoint theirs in namespace team "
        "(a Secret labelled notifications.tensorstack.dev/endpoint=true)",
        "annotation notifications.tensorstack.dev/to: no endpoint ops-private in namespace "
        "team (a Secret labelled notifications.tensorstack.dev/endpoint=true)",
        "annotation notifications.tensorstack.dev/to: endpoint team/broken: a webhook needs "
        "key secret, the HMAC key its messages are signed with",
    )


def test_without_the_operators_namespace_there_are_no_administrators_defaults() -> None:
    directory = Directory(*DIRECTORY.all)
    directory.namespace = None
    found, _ = endpoints(directory, "team", choice({}))
    assert refs(found) == ["team/team-chat"]
