"""The TensorBoard kind's models, and tensorboardSpec / status.tensorboard on the
three T9k job kinds: the fileset forms served and refused (the same messages in
the model and in the CRD's CEL rules), names, and the seed's status shape."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api import colossalai, deepspeed, pytorch, tensorboard
from t9k_operator.api.tensorboard import (
    MSG_CLAIM_TOO_LONG,
    MSG_DUPLICATE_FILESET,
    MSG_FILESET_COMMA,
    MSG_FILESET_FORM,
    MSG_FILESET_PARENT,
    MSG_JOB_NAME_LENGTH,
    MSG_NAME,
    MSG_NAME_LENGTH,
    TensorBoardObject,
    TensorBoardSpec,
    fileset_error,
)
from tests.unit.api.helpers import (
    assert_described,
    assert_structural,
    committed_crd,
    is_subset,
    load,
    rules,
    schema_of,
)

ACCEPTED = [
    "t9k://pvc/yolov5/yolov5_pytorch/run/train/",  # the T9k examples' form, unchanged
    "t9k://pvc/logs",  # the whole claim
    "t9k://pvc/logs/",
    "t9k://pvc/my.claim-2/a/b c/2024-01-01T10:00",  # dots, spaces and colons are fine
    "t9k://pvc/logs/..hidden/x",  # a name that starts with two dots is not '..'
]
REFUSED = [
    ("s3://bucket/logs", MSG_FILESET_FORM),
    ("t9k://minio/bucket/logs", MSG_FILESET_FORM),
    ("/data/logs", MSG_FILESET_FORM),
    ("t9k://pvc/", MSG_FILESET_FORM),
    ("t9k://pvc/Logs/x", MSG_FILESET_FORM),
    ("t9k://pvc/-logs/x", MSG_FILESET_FORM),
    ("t9k://pvc/logs/a,b", MSG_FILESET_COMMA),
    ("t9k://pvc/logs/../other", MSG_FILESET_PARENT),
    ("t9k://pvc/logs/a/..", MSG_FILESET_PARENT),
    ("t9k://pvc/" + "a" * 254 + "/x", MSG_CLAIM_TOO_LONG),
]


def spec(*filesets: str, **more: Any) -> dict[str, Any]:
    return {"image": "tensorflow/tensorflow:2.14.0", "trainingLogFilesets": list(filesets), **more}


@pytest.mark.parametrize("url", ACCEPTED)
def test_the_pvc_form_is_accepted(url: str) -> None:
    assert fileset_error(url) is None
    assert TensorBoardSpec.model_validate(spec(url)).training_log_filesets == [url]


@pytest.mark.parametrize(("url", "message"), REFUSED)
def test_every_other_form_is_refused_saying_what_is_served(url: str, message: str) -> None:
    assert fileset_error(url) == message
    with pytest.raises(ValidationError, match=re.escape(message)):
        TensorBoardSpec.model_validate(spec(url))


def test_the_crd_refuses_the_same_forms_with_the_same_messages() -> None:
    """The CEL rules are the validator's, evaluated here with Python's re (RE2 and
    re agree on these patterns); the integration tests run them in the API server."""
    items = schema_of(committed_crd(tensorboard.CRD))["properties"]["spec"]["properties"][
        "trainingLogFilesets"
    ]["items"]
    by_message = rules(items)
    assert set(by_message) == {
        MSG_FILESET_FORM,
        MSG_CLAIM_TOO_LONG,
        MSG_FILESET_COMMA,
        MSG_FILESET_PARENT,
    }

    def cel(rule: str, value: str) -> bool:
        guard = f"!self.startsWith('{tensorboard.FILESET_SCHEME}') || "
        if rule.startswith(guard):
            return not value.startswith(tensorboard.FILESET_SCHEME) or cel(
                rule.removeprefix(guard), value
            )
        if rule.startswith("self.matches('"):
            return re.search(rule.removeprefix("self.matches('")[:-2], value) is not None
        if rule == "!self.contains(',')":
            return "," not in value
        assert rule.startswith("!self.matches('"), rule
        return re.search(rule.removeprefix("!self.matches('")[:-2], value) is None

    for url in ACCEPTED:
        assert all(cel(r["rule"], url) for r in by_message.values()), url
    for url, message in REFUSED:
        broken = {m for m, r in by_message.items() if not cel(r["rule"], url)}
        assert message in broken, (url, message)
        if message == MSG_FILESET_FORM:
            assert broken == {MSG_FILESET_FORM}, f"{url}: one message, the one that helps"


def test_filesets_are_required_distinct_and_bounded() -> None:
    with pytest.raises(ValidationError, match="at least 1 item"):
        TensorBoardSpec.model_validate(spec())
    with pytest.raises(ValidationError, match=MSG_DUPLICATE_FILESET):
        TensorBoardSpec.model_validate(spec("t9k://pvc/a/x", "t9k://pvc/a/x"))
    unset = TensorBoardSpec.model_validate({"trainingLogFilesets": ["t9k://pvc/a"]})
    assert unset.image == "tensorflow/tensorflow:2.14.0"  # the CRD's default, as before
    node = schema_of(committed_crd(tensorboard.CRD))["properties"]["spec"]["properties"]
    assert node["trainingLogFilesets"]["x-kubernetes-list-type"] == "set"  # duplicates refused
    assert node["trainingLogFilesets"]["maxItems"] == tensorboard.MAX_FILESETS
    assert set(node["resources"]["properties"]) >= {"limits", "requests"}


def obj(name: str) -> dict[str, Any]:
    return {
        "apiVersion": tensorboard.API_VERSION,
        "kind": "TensorBoard",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec("t9k://pvc/logs/train"),
    }


def test_a_tensorboards_name_names_its_service() -> None:
    assert TensorBoardObject.from_dict(obj("a" * tensorboard.MAX_NAME)).name
    with pytest.raises(ValidationError, match=re.escape(MSG_NAME_LENGTH)):
        TensorBoardObject.from_dict(obj("a" * (tensorboard.MAX_NAME + 1)))
    with pytest.raises(ValidationError, match=re.escape(MSG_NAME)):
        TensorBoardObject.from_dict(obj("1tb"))
    root = rules(schema_of(committed_crd(tensorboard.CRD)))
    assert set(root) == {MSG_NAME, MSG_NAME_LENGTH}
    assert f"<= {tensorboard.MAX_NAME}" in root[MSG_NAME_LENGTH]["rule"]


def test_the_crd_is_structural_described_and_shows_how_to_reach_it() -> None:
    crd = committed_crd(tensorboard.CRD)
    assert crd["spec"]["group"] == "tensorstack.dev"
    assert crd["spec"]["names"]["kind"] == "TensorBoard"
    assert "categories" not in crd["spec"]["names"], "kubectl get t9k lists jobs only"
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1beta1" and version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Port-Forward"] == ".status.portForward"
    assert columns["Ready"] == '.status.conditions[?(@.type=="Ready")].status'
    schema = schema_of(crd)
    assert_structural(schema)
    assert_described(schema)


# -- on the job kinds --------------------------------------------------------------------

T9K_JOB_KINDS = [pytorch, deepspeed, colossalai]

SEED_STATUS = """\
tensorboard:
  action: NOP
  dependent:
    apiVersion: tensorstack.dev/v1beta1
    kind: TensorBoard
    name: torch-mnist-trainingjob-5b373
    namespace: demo
    uid: b09378f3-2164-4f14-a425-a1340fa32d7d
  note: TensorBoard [torch-mnist-trainingjob-5b373] is ready
  ready: true
  reason: DependentReady
  type: Normal
"""


@pytest.mark.parametrize("api", T9K_JOB_KINDS, ids=lambda m: m.KIND)
def test_every_t9k_job_kind_takes_the_tensorboard_spec_and_reports_its_state(api: Any) -> None:
    spec_model, status_model = api.CRD.spec_model, api.CRD.status_model
    assert spec_model.model_fields["tensorboard_spec"].annotation == TensorBoardSpec | None
    status = status_model.model_validate(load(SEED_STATUS))
    assert is_subset(load(SEED_STATUS), status.model_dump(by_alias=True, exclude_none=True))
    schema = schema_of(committed_crd(api.CRD))
    tb = schema["properties"]["spec"]["properties"]["tensorboardSpec"]
    assert "not acted on" not in tb["description"]
    assert "status.tensorboard" in tb["description"]
    assert rules(tb["properties"]["trainingLogFilesets"]["items"])[MSG_FILESET_FORM]
    assert set(schema["properties"]["status"]["properties"]["tensorboard"]["properties"]) == {
        "action",
        "dependent",
        "note",
        "ready",
        "reason",
        "type",
    }
    assert MSG_JOB_NAME_LENGTH in rules(schema)


def test_the_msjob_has_no_tensorboard() -> None:
    from t9k_operator.api import msjob

    schema = schema_of(committed_crd(msjob.CRD))
    assert "tensorboardSpec" not in schema["properties"]["spec"]["properties"]
    assert "tensorboard" not in schema["properties"]["status"]["properties"]


def test_the_t9k_examples_tensorboard_spec_parses_unchanged() -> None:
    raw = load(
        """\
tensorboardSpec:
  trainingLogFilesets:
  - t9k://pvc/yolov5/yolov5_pytorch/run/train/
  image: tensorflow/tensorflow:2.14.0
"""
    )
    parsed = TensorBoardSpec.model_validate(raw["tensorboardSpec"])
    assert parsed.training_log_filesets == ["t9k://pvc/yolov5/yolov5_pytorch/run/train/"]
    dumped = parsed.model_dump(by_alias=True, exclude_unset=True)
    assert dumped == raw["tensorboardSpec"]
