"""TensorBoards in the 2025 layout (spec.logDir, suspend, scheduler) on the
local cluster, the operator as its ServiceAccount: every TensorBoard example
of T9k's 2025 manual applied unchanged (accepted, nothing pruned, its pod
built as the guide says); admission refusing a TensorBoard with no place of
logs, two layouts or two source kinds, naming the fields; a suspended
TensorBoard losing its pod and keeping its Service; S3 credentials reaching
the pod only by reference, never shown in status, Events or the operator's
log. The pod's program is run for real in test_tensorboard_program.py (logs
in files) and test_tensorboard_s3.py (logs in a real S3 server, and behind an
HTTP URL)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from t9k_operator.api import tensorboard as api
from t9k_operator.api import tensorboard_logdir as logdir
from t9k_operator.integrations.tensorboard import build
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.kube import Invalid, KubeClient, NotFound
from t9k_operator.resources import PODS, SECRETS, SERVICES
from tests import manual_tensorboard as manual
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_tensorboard import provide, ready_condition, tb_status, wait_ready
from tests.unit.api.helpers import is_subset

PVC = {"pvc": [{"name": "tutorial", "subPath": ["train/logs"]}]}


def board(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "metadata": {"name": name},
        "spec": spec,
    }


def s3_secret(name: str, values: dict[str, str]) -> dict[str, Any]:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}


def wait_pod(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    def created() -> dict[str, Any] | None:
        try:
            return admin.get(PODS, f"{name}-tensorboard", namespace)
        except NotFound:
            return None

    pod: dict[str, Any] = wait_for(created, 30, f"the pod of TensorBoard {name}")
    return pod


# -- the manual's examples ------------------------------------------------------------------


@pytest.mark.usefixtures("operator")
def test_every_example_of_the_manual_is_accepted_unchanged_and_gets_its_pod(
    admin: KubeClient, namespace: str
) -> None:
    if manual.missing():
        pytest.skip(f"the manual is not beside the clone: {manual.missing()}")
    examples = manual.examples()
    assert len(examples) >= 2, f"the guide has a pvc and an s3 example: {sorted(examples)}"
    provide(Jobs(admin, namespace), "tutorial")  # the claim the guide's example names
    admin.create(SECRETS, s3_secret("my-s3-env", {"AWS_ACCESS_KEY_ID": "k"}), namespace)
    for name, example in examples.items():
        stored = admin.create(TENSORBOARDS, example, namespace)
        assert is_subset(example["spec"], stored["spec"]), (
            f"{name}: a field was pruned or changed: applied {example['spec']}, "
            f"stored {stored['spec']}"
        )
        pod = wait_pod(admin, namespace, name)
        (c, *_) = pod["spec"]["containers"]
        log_dir = example["spec"]["logDir"]
        if "pvc" in log_dir:  # the claim mounted read-only, its directory served
            (source,) = log_dir["pvc"]
            volumes = pod["spec"]["volumes"]
            claims = [v["persistentVolumeClaim"] for v in volumes if "persistentVolumeClaim" in v]
            assert claims == [{"claimName": source["name"], "readOnly": True}]
            entries = [
                f"{source['name']}/{s}:/t9k/pvc/{source['name']}/{s}" for s in source["subPath"]
            ]
            assert c["command"][2] == ",".join(entries)
        if "s3" in log_dir:  # every URI read with the Secret's keys
            secret = log_dir["s3"]["secretRef"]["name"]
            assert {e["valueFrom"]["secretKeyRef"]["name"] for e in c["env"]} == {secret}
            uris = log_dir["s3"]["uri"]
            assert [entry.split(":", 1)[1] for entry in c["command"][2].split(",")] == uris
    cond = wait_ready(admin, namespace, "tensorboard-0", "True")
    assert cond["reason"] == "Ready"


# -- admission ------------------------------------------------------------------------------


@pytest.mark.usefixtures("crds_installed")
@pytest.mark.parametrize(
    ("spec", "message", "field"),
    [
        ({}, api.MSG_ONE_LAYOUT, "spec"),
        (
            {"logDir": PVC, "trainingLogFilesets": ["t9k://pvc/tutorial/train/logs"]},
            api.MSG_ONE_LAYOUT,
            "spec",
        ),
        ({"logDir": {}}, logdir.MSG_ONE_SOURCE, "spec.logDir"),
        (
            {"logDir": PVC | {"http": {"url": ["http://files.example/a/ev"]}}},
            logdir.MSG_ONE_SOURCE,
            "spec.logDir",
        ),
        (
            {"logDir": {"pvc": [{"name": "t", "subPath": ["../x"]}]}},
            logdir.MSG_PARENT,
            "spec.logDir.pvc[0].subPath[0]",
        ),
        (
            {"logDir": {"s3": {"secretRef": {"name": "s"}, "uri": ["http://bucket/x"]}}},
            logdir.MSG_S3_URI,
            "spec.logDir.s3.uri[0]",
        ),
    ],
    ids=["neither", "both", "no-source", "two-sources", "parent", "s3-form"],
)
def test_admission_refuses_what_does_not_say_where_the_logs_are_once(
    admin: KubeClient, namespace: str, spec: dict[str, Any], message: str, field: str
) -> None:
    with pytest.raises(Invalid) as refused:
        admin.create(TENSORBOARDS, board("bad", spec), namespace)
    assert message in refused.value.message and f"{field}:" in refused.value.message
    with pytest.raises(Invalid) as refused_job:
        Jobs(admin, namespace).create(
            pytorch_job("bad", [("worker", 1, "Never")], tensorboardSpec=spec)
        )
    assert message in refused_job.value.message
    assert f"spec.tensorboardSpec{field.removeprefix('spec')}:" in refused_job.value.message


# -- suspend --------------------------------------------------------------------------------


@pytest.mark.usefixtures("operator")
def test_suspended_its_pod_is_deleted_its_service_kept_and_resumed_it_serves_again(
    admin: KubeClient, namespace: str
) -> None:
    provide(Jobs(admin, namespace), "tutorial")
    admin.create(TENSORBOARDS, board("paused", {"logDir": PVC}), namespace)
    wait_ready(admin, namespace, "paused", "True")
    before = admin.get(PODS, "paused-tensorboard", namespace)
    service = admin.get(SERVICES, "paused-tensorboard", namespace)

    admin.patch(TENSORBOARDS, "paused", {"spec": {"suspend": True}}, namespace)

    def suspended() -> dict[str, Any] | None:
        cond = ready_condition(tb_status(admin, namespace, "paused"))
        return cond if cond.get("reason") == "Suspended" else None

    wait_for(suspended, 30, "the Suspended condition")

    def pod_gone() -> bool:
        try:
            admin.get(PODS, "paused-tensorboard", namespace)
        except NotFound:
            return True
        return False

    wait_for(pod_gone, 30, "the pod of a suspended TensorBoard to go")
    kept = admin.get(SERVICES, "paused-tensorboard", namespace)
    assert kept["metadata"]["uid"] == service["metadata"]["uid"], "its Service is kept"
    assert Jobs(admin, namespace).wait_event("paused", "Suspended")[0] == "Normal"
    time.sleep(3)
    assert pod_gone(), "suspended, it stays without a pod"

    admin.patch(TENSORBOARDS, "paused", {"spec": {"suspend": False}}, namespace)
    wait_ready(admin, namespace, "paused", "True")
    after = admin.get(PODS, "paused-tensorboard", namespace)
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    # Resumed as it was: the pod built from the same spec (its hash), the same program.
    hash_of = lambda pod: pod["metadata"]["annotations"][build.SPEC_HASH]  # noqa: E731
    assert hash_of(after) == hash_of(before)
    assert after["spec"]["containers"][0]["command"] == before["spec"]["containers"][0]["command"]


# -- S3 credentials ---------------------------------------------------------------------


@pytest.mark.usefixtures("crds_installed")
def test_s3_credentials_reach_the_pod_by_reference_and_are_shown_nowhere(
    admin: KubeClient, namespace: str, operator: OperatorProcess
) -> None:
    values = {
        "AWS_ACCESS_KEY_ID": "AKIDtb7c1e0f4a9d",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t-9f8e7d6c5b4a-never-shown",
        "S3_ENDPOINT": "http://store-7a6b5c.example:8333",
    }
    admin.create(SECRETS, s3_secret("store", values), namespace)
    spec = {"logDir": {"s3": {"secretRef": {"name": "store"}, "uri": ["s3://runs/mnist/"]}}}
    admin.create(TENSORBOARDS, board("s3", spec), namespace)
    pod = wait_pod(admin, namespace, "s3")
    env = pod["spec"]["containers"][0]["env"]
    assert {e["name"]: e["valueFrom"]["secretKeyRef"]["key"] for e in env} == {
        "AWS_ACCESS_KEY_ID": "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY",
        "S3_ENDPOINT": "S3_ENDPOINT",
        "AWS_REGION": "AWS_REGION",
    }
    wait_ready(admin, namespace, "s3", "True")
    shown = [
        json.dumps(admin.get(TENSORBOARDS, "s3", namespace)),
        json.dumps(pod),
        json.dumps(Jobs(admin, namespace).events("s3")),
        json.dumps(Jobs(admin, namespace).events("s3-tensorboard")),
        operator.logs(),
    ]
    for value in values.values():
        for where, text in zip(
            ("status", "pod", "events", "pod events", "log"), shown, strict=True
        ):
            assert value not in text, f"a secret value is in the TensorBoard's {where}"
