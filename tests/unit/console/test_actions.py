"""The console's actions: pause, resume and delete from the Job page, and a new
job from YAML or from ``t9k create``'s fields, through a recording fake of the
SDK's client. Refusals carry the API server's message verbatim (as JSON text,
never markup) and the console's status says what happened; nothing reaches
the client without the session's CSRF token."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from t9k_operator.console import app as console_app
from t9k_operator.sdk import errors
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of, csrf_token_of, signed_in

MNIST = "/api/jobs/team-a/PyTorchTrainingJob/mnist"
FORBIDDEN = (
    'pytorchtrainingjobs.batch.tensorstack.dev "mnist" is forbidden: User "alice" cannot '
    'patch resource "pytorchtrainingjobs" in API group "batch.tensorstack.dev" in the '
    'namespace "team-a" <script>alert(1)</script>'
)
TYPO = (
    "failed to create typed patch object (team-a/typo; batch.tensorstack.dev/v1beta1, "
    "Kind=PyTorchTrainingJob): .spec.replicaSpecs[0].templat: field not declared in schema"
)
JOB_YAML = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: fresh
spec:
  replicaSpecs:
  - type: worker
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: torch:1
          command: [python, train.py]
"""


class FakeWrites:
    """The SDK client's writes, recorded; ``refuse`` maps a verb to the error it raises."""

    namespace = "team-a"

    def __init__(self, refuse: dict[str, Exception] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.refuse = refuse or {}
        self.existing = {("team-a", "mnist")}

    def _do(self, verb: str, *args: Any) -> dict[str, Any]:
        self.calls.append((verb, *args))
        if verb in self.refuse:
            raise self.refuse[verb]
        return {}

    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Any:
        self.calls.append(("get", name, kind, namespace))
        if (namespace, name) in self.existing:
            return copy.deepcopy(f.MNIST)
        raise errors.NotFound(f'job "{name}" not found', status=404)

    def pause(self, name: str, kind: str | None = None, namespace: str | None = None) -> Any:
        return self._do("pause", name, kind, namespace)

    def resume(self, name: str, kind: str | None = None, namespace: str | None = None) -> Any:
        return self._do("resume", name, kind, namespace)

    def delete(self, name: str, kind: str | None = None, namespace: str | None = None) -> Any:
        return self._do("delete", name, kind, namespace)

    def submit(self, source: Any, *, dry_run: bool = False) -> list[dict[str, Any]]:
        self._do("submit", copy.deepcopy(source), dry_run)
        stored = copy.deepcopy(source)
        stored["metadata"].setdefault("namespace", self.namespace)
        stored["metadata"]["uid"] = "0000-dry" if dry_run else "1111-real"
        stored["metadata"]["managedFields"] = [{"manager": "t9k"}]
        return [stored]

    def writes(self) -> list[tuple[Any, ...]]:
        """The calls that change something (a dry run does not)."""
        return [c for c in self.calls if c[0] not in ("get", "submit") or c[-1] is False]


def action_client(writes: FakeWrites) -> tuple[TestClient, str]:
    """A logged-in client of a console over the fixtures' jobs, and its CSRF token."""
    client = signed_in(board_of([f.MNIST, f.MS], f.PODS), writes=writes)
    return client, csrf_token_of(client.get("/new").text)


def post(client: TestClient, token: str, path: str, data: Any = None) -> Any:
    return client.post(path, headers={"X-CSRF-Token": token}, json=data)


# -- pause, resume, delete ---------------------------------------------------------------


@pytest.mark.parametrize(("verb", "status"), [("pause", 200), ("resume", 200), ("delete", 202)])
def test_an_action_is_the_sdk_call_t9k_makes(verb: str, status: int) -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    response = post(client, token, f"{MNIST}/{verb}")
    assert response.status_code == status
    assert response.json()["done"] == verb
    assert writes.calls == [(verb, "mnist", "PyTorchTrainingJob", "team-a")]


def test_a_403_from_rbac_is_shown_with_the_api_servers_message_verbatim() -> None:
    refused = errors.Forbidden(FORBIDDEN, status=403, reason="Forbidden")
    writes = FakeWrites({"pause": refused})
    client, token = action_client(writes)
    response = post(client, token, f"{MNIST}/pause")
    assert response.status_code == 403
    assert response.json()["error"] == FORBIDDEN
    assert response.json()["reason"] == "Forbidden"
    assert "<script" not in response.text  # escaped in the JSON, written as text


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.NotFound('"mnist" not found', status=404, reason="NotFound"), 404),
        (errors.Conflict("the object has been modified", status=409, reason="Conflict"), 409),
        (errors.Invalid("spec.runMode: Invalid value", status=422, reason="Invalid"), 422),
        (errors.Unsupported("a MSJob cannot be paused: its API has no run mode"), 409),
        (errors.ConnectionFailed("connection refused"), 502),
    ],
)
def test_each_refusal_keeps_its_status_and_message(error: errors.T9kError, status: int) -> None:
    client, token = action_client(FakeWrites({"resume": error}))
    response = post(client, token, f"{MNIST}/resume")
    assert response.status_code == status
    assert response.json()["error"] == error.message


def test_an_action_without_the_csrf_token_is_refused_and_changes_nothing() -> None:
    writes = FakeWrites()
    client, _ = action_client(writes)
    for path in (f"{MNIST}/delete", f"{MNIST}/pause", "/api/new/create"):
        assert client.post(path).status_code == 403
        assert client.post(path, headers={"X-CSRF-Token": "guess"}).status_code == 403
    assert writes.calls == []


def test_a_kind_the_console_does_not_show_or_an_unknown_verb_is_404() -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    assert post(client, token, "/api/jobs/team-a/Secret/x/delete").status_code == 404
    assert post(client, token, f"{MNIST}/restart").status_code == 404
    assert writes.calls == []


# -- a new job from YAML -----------------------------------------------------------------


def new_job(action: str, status: int) -> tuple[FakeWrites, dict[str, Any]]:
    """JOB_YAML posted to ``/api/new/<action>`` of a console of its own: what
    it asked of the SDK's client, and its answer (asserted to be ``status``)."""
    writes = FakeWrites()
    client, token = action_client(writes)
    response = post(client, token, f"/api/new/{action}", {"yaml": JOB_YAML})
    assert response.status_code == status
    return writes, response.json()


def test_a_preview_is_a_dry_run_and_creates_nothing() -> None:
    writes, data = new_job("preview", 200)
    assert data["key"] == "team-a/PyTorchTrainingJob/fresh" and data["created"] is False
    assert yaml.safe_load(data["yaml"])["metadata"]["uid"] == "0000-dry"
    assert "managedFields" not in data["yaml"]
    assert [c[0] for c in writes.calls] == ["get", "submit"]
    assert writes.calls[-1][-1] is True  # dry_run
    assert writes.writes() == []


def test_a_misspelt_field_is_refused_with_its_path_and_nothing_is_created() -> None:
    writes = FakeWrites({"submit": errors.Invalid(TYPO, status=500)})
    client, token = action_client(writes)
    typo = JOB_YAML.replace("    template:", "    templat:")
    for action in ("preview", "create"):
        response = post(client, token, f"/api/new/{action}", {"yaml": typo})
        assert response.status_code == 422
        data = response.json()
        assert data["error"] == TYPO
        assert data["fields"] == [".spec.replicaSpecs[0].templat"]
        assert "templat:" in data["manifest"]
    # The real apply was tried once and refused; the fake's refusal is the API server's.
    assert [c[-1] for c in writes.calls if c[0] == "submit"] == [True, False]


def test_create_applies_for_real_and_links_the_new_jobs_page() -> None:
    writes, data = new_job("create", 201)
    assert data["url"] == "/jobs/team-a/PyTorchTrainingJob/fresh" and data["created"] is True
    assert writes.calls[-1][0] == "submit" and writes.calls[-1][-1] is False


def test_create_never_changes_a_job_that_exists() -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    taken = JOB_YAML.replace("name: fresh", "name: mnist")
    response = post(client, token, "/api/new/create", {"yaml": taken})
    assert response.status_code == 409
    assert "already exists" in response.json()["error"]
    assert [c[0] for c in writes.calls] == ["get"]


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (JOB_YAML + "---\n" + JOB_YAML, "one job at a time: this YAML has 2 documents"),
        ("", "no job: the YAML is empty"),
        ("a: [", "not YAML"),
        ("kind: List\nitems: []\n", "not a list"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "not a job this tool runs"),
        (JOB_YAML.replace("PyTorchTrainingJob", "XGBoostTrainingJob"), "the console makes no"),
        (JOB_YAML.replace("name: fresh", "labels: {}"), "needs metadata.name"),
    ],
)
def test_yaml_that_is_not_one_job_of_a_known_kind_is_refused(text: str, wanted: str) -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    response = post(client, token, "/api/new/preview", {"yaml": text})
    assert response.status_code == 400
    assert wanted in response.json()["error"]
    assert writes.calls == []


def test_a_body_that_is_no_job_request_is_400_and_a_huge_one_413() -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    headers = {"X-CSRF-Token": token}
    assert client.post("/api/new/preview", headers=headers, content=b"{").status_code == 400
    assert post(client, token, "/api/new/preview", {"other": 1}).status_code == 400
    huge = {"yaml": "#" * 300_000}
    assert post(client, token, "/api/new/preview", huge).status_code == 413
    assert writes.calls == []


# -- a new job from t9k create's fields --------------------------------------------------


FORM = {
    "kind": "pytorch",
    "name": "formed",
    "image": "torch:1",
    "command": "python train.py --lr '0.1 0.2'",
    "workers": "2",
    "gpus": "1",
    "torchrun": True,
    "labels": "team=a\nrun=3",
    "annotations": "",
}


def test_the_form_builds_the_job_t9k_create_builds() -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    response = post(client, token, "/api/new/preview", {"form": FORM})
    assert response.status_code == 200, response.text
    sent = writes.calls[-1][1]
    assert (sent["kind"], sent["metadata"]["name"]) == ("PyTorchTrainingJob", "formed")
    assert sent["metadata"]["labels"] == {"team": "a", "run": "3"}
    assert "0.1 0.2" in json.dumps(sent["spec"])  # the command split as a shell would
    assert yaml.safe_load(response.json()["manifest"]) == sent
    assert writes.writes() == []


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        ({"kind": "tensorboard"}, "choose a kind"),
        ({"command": ""}, "a command is needed"),
        ({"workers": "two"}, "workers must be a whole number"),
        ({"labels": "nokey"}, "a label wants KEY=VALUE"),
        ({"image": ""}, "a job needs a name and an image"),
    ],
)
def test_a_form_the_builder_refuses_is_400_with_its_reason(
    change: dict[str, str], wanted: str
) -> None:
    writes = FakeWrites()
    client, token = action_client(writes)
    response = post(client, token, "/api/new/preview", {"form": {**FORM, **change}})
    assert response.status_code == 400
    assert wanted in response.json()["error"]
    assert writes.calls == []


# -- the pages ---------------------------------------------------------------------------


def test_the_pages_have_no_inline_script_and_offer_the_known_kinds() -> None:
    client, _ = action_client(FakeWrites())
    page = client.get("/new").text
    assert re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S) == [
        (' src="/static/new.js" defer', "")
    ]
    assert not re.search(r"\s(on\w+|style)=", page) and "<style" not in page
    kinds = re.findall(r'<option value="([^"]+)">', page)
    assert kinds == ["pytorch", "deepspeed", "mindspore"]
    job_page = client.get("/jobs/team-a/PyTorchTrainingJob/mnist").text
    assert 'id="confirm"' in job_page and not re.search(r"\s(on\w+|style)=", job_page)


@pytest.mark.parametrize("name", ["job.js", "new.js"])
def test_the_scripts_write_text_never_html(name: str) -> None:
    script = (Path(console_app.STATIC) / name).read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "X-CSRF-Token" in script and "showModal" in script
