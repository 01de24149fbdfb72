"""The generated PyTorchTrainingJob CRD on a real API server.

It must take every example of the product doc as written and store it
unpruned, refuse bad specs at admission with a message naming the field, and
serve kubectl's explain, short names, categories and scale.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api.pytorch import (
    CRD,
    MSG_DISTINCT_TYPES,
    MSG_ELASTIC_NEEDS_TORCHRUN,
    MSG_ONE_MASTER,
    MSG_POD_NAME_LENGTH,
)
from t9k_operator.api.specs import (
    MSG_ELASTIC_BOUNDS_REQUIRED,
    MSG_ELASTIC_EXPECTED,
    MSG_ELASTIC_MIN_MAX,
)
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import (
    applied,
    assert_stored_as_sent,
    install_crd,
    stored_object,
)
from tests.unit.api.helpers import load
from tests.unit.api.test_pytorch_models import (
    HEADER,
    SPEC_EXAMPLES,
)

JOB = "pytorch-example"

# Everything a pod template may carry that a careless schema would prune.
RICH_TEMPLATE = (
    HEADER
    + """\
spec:
  replicaSpecs:
  - type: master
    replicas: 1
    restartPolicy: ExitCode
    scalingWeight: 2
    template:
      metadata:
        labels:
          team: vision
          app.kubernetes.io/name: trainer
        annotations:
          example.com/note: "kept as is"
      spec:
        nodeSelector:
          accelerator: a100
        tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
        securityContext:
          runAsUser: 1000
          fsGroup: 2000
        initContainers:
        - name: fetch
          image: busybox:1.36
          command: ["sh", "-c", "echo ready"]
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
          workingDir: /workspace
          command: ["python"]
          args: ["train.py", "--epochs", "3"]
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              add: ["IPC_LOCK"]
          ports:
          - name: pytorchjob-port
            containerPort: 23456
          resources:
            limits:
              cpu: "4"
              memory: 8Gi
              nvidia.com/gpu: 2
              rdma/hca: 1
            requests:
              cpu: 2
              memory: 4Gi
              nvidia.com/gpu: 2
          volumeMounts:
          - mountPath: /dev/shm
            name: dshm
        volumes:
        - name: dshm
          emptyDir:
            medium: Memory
            sizeLimit: "1Gi"
  - type: worker
    replicas: 3
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
  torchrunConfig:
    enabled: true
    maxRestarts: 3
    procPerNode: gpu
    rdzvBackend: etcd-v2
    extraOptions: ["--monitor-interval=1"]
  runPolicy:
    backoffLimit: 5
    activeDeadlineSeconds: 3600
    cleanUpPolicy: Unfinished
  tensorboardSpec:
    image: tensorflow/tensorflow:2.14.0
    trainingLogFilesets: ["t9k://pvc/logs/train"]
"""
)


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def stored(cluster: Cluster, namespace: str, name: str = JOB) -> dict[str, Any]:
    return stored_object(cluster, CRD, namespace, name)


def test_rich_template_is_kept_whole_and_defaults_are_filled(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    applied(cluster, namespace, RICH_TEMPLATE)
    obj = stored(cluster, namespace)
    sent = load(RICH_TEMPLATE)
    assert_stored_as_sent(sent, obj)
    template = obj["spec"]["replicaSpecs"][0]["template"]
    assert template["metadata"]["labels"]["team"] == "vision"
    assert template["metadata"]["annotations"] == {"example.com/note": "kept as is"}
    container = template["spec"]["containers"][0]
    assert container["workingDir"] == "/workspace"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert template["spec"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Gi"}
    # Server-side defaults come from the models.
    worker = obj["spec"]["replicaSpecs"][1]
    assert worker["restartPolicy"] == "OnFailure"
    assert obj["spec"]["torchrunConfig"]["procPerNode"] == "gpu"


def test_defaults_are_filled_by_the_server(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["torchrun"])
    spec = stored(cluster, namespace)["spec"]
    assert spec["replicaSpecs"][0]["replicas"] == 1
    assert spec["replicaSpecs"][0]["restartPolicy"] == "OnFailure"
    assert "runPolicy" not in spec  # optional objects stay absent
    applied(cluster, namespace, SPEC_EXAMPLES["debug-2"])
    debug = stored(cluster, namespace)["spec"]["runMode"]["debug"]
    assert debug == {"enabled": True, "replicaSpecs": []}


def test_scale_subresource_moves_expected_replicas(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["elastic"])
    cluster.kubectl("scale", "pytj", JOB, "-n", namespace, "--replicas=9")
    assert stored(cluster, namespace)["spec"]["elastic"]["expectedReplicas"] == 9
    proc = cluster.kubectl("scale", "pytj", JOB, "-n", namespace, "--replicas=11", check=False)
    assert proc.returncode != 0
    assert MSG_ELASTIC_EXPECTED in proc.stderr


# -- (b) invalid specs are refused, naming the field ---------------------------------------------


def _worker(**fields: Any) -> dict[str, Any]:
    return {
        "type": "worker",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "busybox"}]}},
        **fields,
    }


def _job(spec: dict[str, Any], name: str = JOB) -> str:
    body = {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {"replicaSpecs": [_worker()], **spec},
    }
    return yaml.safe_dump(body)


_ELASTIC = {"enabled": True, "minReplicas": 2, "maxReplicas": 4, "expectedReplicas": 3}

INVALID: dict[str, tuple[str, list[str]]] = {
    "elastic-without-torchrun": (
        _job({"elastic": _ELASTIC}),
        ["spec.elastic.enabled", MSG_ELASTIC_NEEDS_TORCHRUN],
    ),
    "elastic-with-torchrun-disabled": (
        _job({"elastic": _ELASTIC, "torchrunConfig": {"enabled": False}}),
        ["spec.elastic.enabled", MSG_ELASTIC_NEEDS_TORCHRUN],
    ),
    "elastic-without-bounds": (
        _job({"elastic": {"enabled": True}, "torchrunConfig": {"enabled": True}}),
        ["spec.elastic", MSG_ELASTIC_BOUNDS_REQUIRED],
    ),
    "priority-without-a-priority-class": (
        _job({"scheduler": {"t9kScheduler": {"queue": "default", "priority": 101}}}),
        ["spec.scheduler.t9kScheduler.priority", "less than or equal to 100"],
    ),
    "negative-priority": (
        _job({"scheduler": {"t9kScheduler": {"queue": "default", "priority": -1}}}),
        ["spec.scheduler.t9kScheduler.priority", "greater than or equal to 0"],
    ),
    "bad-restart-policy": (
        _job({"replicaSpecs": [_worker(restartPolicy="Sometimes")]}),
        ["spec.replicaSpecs[0].restartPolicy", "Unsupported value"],
    ),
    "min-above-max": (
        _job(
            {
                "elastic": {**_ELASTIC, "minReplicas": 5},
                "torchrunConfig": {"enabled": True},
            }
        ),
        ["spec.elastic.minReplicas", MSG_ELASTIC_MIN_MAX],
    ),
    "expected-above-max": (
        _job(
            {
                "elastic": {**_ELASTIC, "expectedReplicas": 5},
                "torchrunConfig": {"enabled": True},
            }
        ),
        ["spec.elastic.expectedReplicas", MSG_ELASTIC_EXPECTED],
    ),
    "two-master-replicas": (
        _job({"replicaSpecs": [_worker(type="master", replicas=2), _worker()]}),
        ["spec.replicaSpecs", MSG_ONE_MASTER],
    ),
    "two-master-entries": (
        _job({"replicaSpecs": [_worker(type="master"), _worker(type="master")]}),
        ["spec.replicaSpecs", MSG_ONE_MASTER, MSG_DISTINCT_TYPES],
    ),
    "duplicate-types": (
        _job({"replicaSpecs": [_worker(), _worker(replicas=2)]}),
        ["spec.replicaSpecs", MSG_DISTINCT_TYPES],
    ),
    "proc-per-node-abc": (
        _job({"torchrunConfig": {"enabled": True, "procPerNode": "abc"}}),
        ["spec.torchrunConfig.procPerNode", "should match"],
    ),
    "bad-rdzv-backend": (
        _job({"torchrunConfig": {"enabled": True, "rdzvBackend": "zmq"}}),
        ["spec.torchrunConfig.rdzvBackend", "Unsupported value"],
    ),
    "negative-replicas": (
        _job({"replicaSpecs": [_worker(replicas=-1)]}),
        ["spec.replicaSpecs[0].replicas", "greater than or equal to 0"],
    ),
    "upper-case-type": (
        _job({"replicaSpecs": [_worker(type="Worker")]}),
        ["spec.replicaSpecs[0].type", "should match"],
    ),
    "no-template": (
        _job({"replicaSpecs": [{"type": "worker"}]}),
        ["spec.replicaSpecs[0].template", "Required value"],
    ),
    "no-replica-specs": (
        _job({"replicaSpecs": []}),
        ["spec.replicaSpecs", "should have at least 1 items"],
    ),
    "bad-clean-up-policy": (
        _job({"runPolicy": {"cleanUpPolicy": "Some"}}),
        ["spec.runPolicy.cleanUpPolicy", "Unsupported value"],
    ),
    "negative-backoff-limit": (
        _job({"runPolicy": {"backoffLimit": -1}}),
        ["spec.runPolicy.backoffLimit", "greater than or equal to 0"],
    ),
    "name-not-a-dns-1035-label": (
        _job({}, name="1st-job"),
        ["metadata.name", "DNS-1035"],
    ),
    "name-too-long-for-pod-names": (
        _job({}, name="j" + "x" * 55),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
}


def test_resume_specs_may_be_set_later_once(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["basic"])
    applied(cluster, namespace, SPEC_EXAMPLES["pause-1"])
    resume = stored(cluster, namespace)["spec"]["runMode"]["pause"]["resumeSpecs"]
    assert resume == [{"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}]


# -- (c), (d) kubectl explain, short names, categories -------------------------------------------


def test_kubectl_explain_shows_descriptions(cluster: Cluster, crd: None) -> None:
    def explain() -> str:
        proc = cluster.kubectl("explain", "pytorchtrainingjob.spec.torchrunConfig", check=False)
        return proc.stdout if proc.returncode == 0 and "procPerNode" in proc.stdout else ""

    out = wait_for(explain, 60, "kubectl explain pytorchtrainingjob.spec.torchrunConfig", 1)
    assert "Launch training with torchrun" in out
    assert "--nproc-per-node" in out
    top = cluster.kubectl("explain", "pytj").stdout
    assert "distributed PyTorch training" in top
