"""The pipeline's Writer for any owner, not only a job: a create strict when
its action says so, a name gone between the create and the look told apart,
and pods in batches only from a job kind's writer (it has the pool)."""

from __future__ import annotations

import pytest
import structlog

from t9k_operator.informers.factory import InformerFactory
from t9k_operator.kube import AlreadyExists
from t9k_operator.reconcilers.pipeline.children import Gone, InformerCaches, Writer
from t9k_operator.reconcilers.pipeline.contract import Action
from t9k_operator.resources import PODS, SERVICES
from tests.unit.reconcilers.fake_kube import FakeKube


def _writer(fake: FakeKube) -> Writer:
    informers = InformerFactory(fake)  # type: ignore[arg-type]
    caches = InformerCaches(informers, (), children=(PODS, SERVICES))
    return Writer(fake, caches)  # type: ignore[arg-type]


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


@pytest.mark.parametrize("strict", [False, True])
def test_a_create_is_strict_when_its_action_says_so(strict: bool) -> None:
    fake = FakeKube()
    seen: list[str | None] = []
    create = fake.create

    def spy(*args: object, field_validation: str | None = None, answer: bool = True) -> object:
        seen.append(field_validation)
        return create(*args, field_validation=field_validation, answer=answer)  # type: ignore[arg-type]

    fake.create = spy  # type: ignore[method-assign]
    action = Action("create", PODS, POD, "a pod", soft=True, strict=strict)
    assert _writer(fake).act(action, "ns/o", "uid-o", structlog.get_logger()) is None
    assert seen == (["Strict"] if strict else [None])


def test_a_create_whose_name_is_gone_when_looked_at_is_told_apart() -> None:
    fake = FakeKube()
    fake.fail_next("create", "Pod", AlreadyExists("pods 'p' already exists"))
    action = Action("create", PODS, POD, "a pod", soft=True)
    assert _writer(fake).act(action, "ns/o", "uid-o", structlog.get_logger()) == Gone()
    assert fake.writes == []


def test_a_writer_without_a_pool_creates_no_pod_batches() -> None:
    action = Action("create_pods", PODS, {"items": [POD]}, "the pods")
    with pytest.raises(ValueError, match="no pool"):
        _writer(FakeKube()).act(action, "ns/o", "uid-o", structlog.get_logger())
