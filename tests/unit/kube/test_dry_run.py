"""A dry run as the API server sees it: ``dryRun=All`` on a create and on a
server-side apply (with strict field validation), and the SDK's ``submit``
asking for one."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from t9k_operator.kinds.registry import by_name
from t9k_operator.kube import KubeClient
from t9k_operator.kube.config import Connection
from t9k_operator.kube.transport import ClientOptions
from t9k_operator.resources import PODS
from t9k_operator.sdk import BadJob, Client
from tests.unit.kube.test_transport import Recorder

JOB = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "PyTorchTrainingJob",
    "metadata": {"name": "mnist"},
    "spec": {"replicaSpecs": []},
}


class Patching(Recorder):
    do_PATCH = Recorder._answer


@pytest.fixture
def client() -> Iterator[KubeClient]:
    Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Patching)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    kube = KubeClient(
        Connection(host=f"http://127.0.0.1:{httpd.server_address[1]}"), ClientOptions(qps=-1)
    )
    yield kube
    kube.close()
    httpd.shutdown()
    httpd.server_close()


def _queries() -> list[dict[str, list[str]]]:
    return [parse_qs(urlsplit(path).query) for _, path, _, _ in Recorder.seen]


def test_create_and_patch_ask_for_a_dry_run_only_when_told(client: KubeClient) -> None:
    client.create(PODS, {"metadata": {"name": "p"}}, "n", dry_run=True)
    client.create(PODS, {"metadata": {"name": "p"}}, "n", field_validation="Strict")
    resource = by_name("pytorch").resource
    client.patch(resource, "mnist", JOB, "n", patch_type="apply", field_manager="t9k", dry_run=True)
    client.patch(resource, "mnist", {"spec": {}}, "n")
    assert _queries() == [
        {"dryRun": ["All"]},
        {"fieldValidation": ["Strict"]},
        {"fieldManager": ["t9k"], "dryRun": ["All"]},
        {},
    ]


def test_submit_dry_run_is_a_strict_apply_that_stores_nothing(client: KubeClient) -> None:
    sdk = Client(kube_client=client, namespace="team-a")
    sdk.submit(JOB, dry_run=True)
    sdk.submit(JOB)
    (verb, path, headers, _), _ = Recorder.seen
    assert verb == "PATCH"
    assert path.startswith("/apis/batch.tensorstack.dev/v1beta1/namespaces/team-a/")
    assert headers["Content-Type"] == "application/apply-patch+yaml"
    dry, stored = _queries()
    assert dry == {"fieldManager": ["t9k"], "fieldValidation": ["Strict"], "dryRun": ["All"]}
    assert stored == {"fieldManager": ["t9k"], "fieldValidation": ["Strict"]}
    with pytest.raises(BadJob, match="a dry run writes no workdir"):
        sdk.submit(JOB, dry_run=True, workdir=".")
