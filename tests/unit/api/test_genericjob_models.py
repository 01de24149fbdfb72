"""GenericJob's API model: the manual's examples and this project's own, the
defaults the CRD tells users, the rules about finish rules and ports, and a
status as the engine writes it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api.genericjob import (
    CRD,
    MSG_DISTINCT_PORTS,
    MSG_RULE_REPLICAS,
    GenericJobObject,
)
from tests.manual_examples import example_texts

JOB = "generic-example"

OWN_EXAMPLES: dict[str, str] = {
    "rules-and-service": """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: generic-example
spec:
  successRules:
  - {"master": [0]}
  - {"worker": [0, 1, 2]}
  - {"master": [2], "worker": [0, 1]}
  failureRules:
  - {"master": [0]}
  service:
    ports:
    - name: http
      port: 2222
  cleanUpPolicy: Unfinished
  scheduler:
    t9kScheduler:
      queue: default
      priority: 50
  runMode:
    debug:
      enabled: true
      replicaSpecs:
      - type: worker
        skipInitContainer: true
        command: ["/usr/bin/sshd"]
    pause:
      enabled: false
      resumeSpecs:
      - type: worker
        skipInitContainer: true
        command: ["/usr/bin/sshd"]
  replicaSpecs:
  - type: master
    replicas: 3
    restartPolicy:
      policy: Always
      limit: 5
    template:
      spec:
        containers:
        - name: main
          image: debian:12
          command: ["sh", "-c", "echo $(type)-$(rank) of $(replicas[worker])"]
  - type: worker
    replicas: 3
    restartPolicy:
      policy: OnFailure
      limit: 2
    template:
      spec:
        containers:
        - name: main
          image: debian:12
          args: ["$(service.master[0].host):$(service.port[http])"]
""",
    "pause": """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: generic-example
spec:
  runMode:
    pause:
      enabled: true
      resumeSpecs:
      - type: worker
        skipInitContainer: true
        command: ["/usr/bin/sshd"]
  replicaSpecs:
  - type: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: main
          image: debian:12
          command: ["sleep", "365"]
""",
}
SPEC_EXAMPLES: dict[str, str] = {**example_texts(), **OWN_EXAMPLES}

STATUS_EXAMPLES: dict[str, str] = {
    "conditions": """\
conditions:
  - lastTransitionTime: "2021-01-18T02:36:09Z"
    status: "True"
    message: "The job has been initialized successfully."
    reason: "-"
    type: Initialized
  - lastTransitionTime: "2021-01-18T02:36:31Z"
    status: "False"
    message: 'The job failed by its failure rule: replicas worker-0 have all failed'
    reason: ReplicaFailed
    type: Running
  - lastTransitionTime: "2021-01-18T02:36:31Z"
    status: "True"
    message: 'The job failed by its failure rule: replicas worker-0 have all failed'
    reason: ReplicaFailed
    type: Failed
phase: Failed
""",
    "tasks": """\
tasks:
- type: worker
  restartCount: 3
  replicas:
  - phase: Running
    name: generic-example-worker-0
    uid: e3ec2ee3-6645-4e21-993f-1e472b94e0ae
    containers: []
""",
    "aggregate": """\
aggregate:
  creating: 0
  deleted: 0
  failed: 0
  pending: 1
  running: 2
  succeeded: 0
  unknown: 0
""",
}


def load(text: str) -> dict[str, Any]:
    return dict(yaml.safe_load(text))


def test_the_own_example_reads_as_written() -> None:
    job = GenericJobObject.from_dict(load(OWN_EXAMPLES["rules-and-service"]))
    spec = job.spec
    assert spec.success_rules[2] == {"master": [2], "worker": [0, 1]}
    assert spec.service is not None and [p.port for p in spec.service.ports] == [2222]
    assert spec.replica_specs[0].restart_policy.policy == "Always"
    assert spec.replica_specs[0].restart_policy.limit == 5
    assert spec.clean_up_policy == "Unfinished"


def test_defaults() -> None:
    raw = load(OWN_EXAMPLES["rules-and-service"])
    raw["spec"] = {"replicaSpecs": [{"type": "worker", "template": {"spec": {}}}]}
    spec = GenericJobObject.from_dict(raw).spec
    rs = spec.replica_specs[0]
    assert (rs.replicas, rs.restart_policy.policy, rs.restart_policy.limit) == (1, "OnFailure", 0)
    assert spec.success_rules == [] and spec.failure_rules == [] and spec.service is None
    assert spec.clean_up_policy == "None" and spec.run_mode is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"successRules": [{"worker": [3]}]}, MSG_RULE_REPLICAS),
        ({"failureRules": [{"ps": [0]}]}, MSG_RULE_REPLICAS),
        (
            {"service": {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}},
            MSG_DISTINCT_PORTS,
        ),
    ],
)
def test_invalid_specs_are_refused(change: dict[str, Any], message: str) -> None:
    raw = load(OWN_EXAMPLES["rules-and-service"])
    raw["spec"].update(change)
    with pytest.raises(ValidationError, match=message):
        GenericJobObject.from_dict(raw)


def test_the_crd_descriptor() -> None:
    assert (CRD.kind, CRD.plural, CRD.short_names, CRD.categories) == (
        "GenericJob",
        "genericjobs",
        ("gj",),
        ("t9k",),
    )
