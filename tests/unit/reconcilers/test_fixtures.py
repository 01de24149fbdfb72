"""The reconciler tests' fixtures give each incarnation of a pod a uid of its
own, as the API server does: the engine counts failures and disruptions by
uid, so a recreated pod that kept its predecessor's uid would hide a failure
counted twice, or never."""

from __future__ import annotations

from t9k_operator.resources import PODS
from tests.unit.reconcilers.fake_kube import FakeKube
from tests.unit.reconcilers.test_engine import job as engine_job
from tests.unit.reconcilers.test_engine import pod, running


def test_the_engines_pod_factory_gives_a_recreated_pod_a_new_uid() -> None:
    first, again = pod("worker", 0, "Failed", 1), pod("worker", 0, "Failed", 1)
    assert first.name == again.name == "j-worker-0"
    assert first.uid != again.uid
    j = engine_job()
    assert running(j)[("worker", 0)].uid != running(j)[("worker", 0)].uid


def test_the_fake_api_server_gives_a_recreated_pod_a_new_uid() -> None:
    fake = FakeKube()
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j-worker-0"}}
    first = fake.create(PODS, body, "ns")
    fake.delete(PODS, "j-worker-0", "ns")
    # Even a body that carries its predecessor's uid (a copy of the old pod):
    # the API server sets the uid of every object it creates.
    second = fake.create(PODS, first, "ns")
    assert second["metadata"]["name"] == "j-worker-0"
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert fake.get(PODS, "j-worker-0", "ns")["metadata"]["uid"] == second["metadata"]["uid"]
