"""Every Rule's two sides agree: its CEL (what the API server checks) and its
Python side (what the models check on parsing), on hand-written examples.

Each case is one rule with a passing and a failing object of the model the
rule is registered on, in the wire shape. The Python side parses both with the
model (the failing one must be refused with the rule's message); the CEL side
evaluates the rule's expression with cel-python on the node the rule sits at
(``self``), with the few Kubernetes CEL extensions the rules use written here
(cel-python is a test extra: in a virtualenv made before it was, the CEL half
skips, which fails under CI=true). A last test checks that the cases cover
every rule of every generated CRD.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from t9k_operator.api import (
    colossalai,
    colossalai_replicas,
    deepspeed,
    deepspeed_config,
    deepspeed_worker,
    elastic,
    genericjob,
    mpijob,
    msjob,
    pytorch,
    specs,
    tensorflow,
    xgboost,
)
from t9k_operator.api import tensorboard as tb
from t9k_operator.api.crd import JOB_NAME_RULE
from t9k_operator.api.rules import Rule
from tests.unit.api.helpers import committed_crd, load_generator

# -- objects in the wire shape ----------------------------------------------------------------

TEMPLATE = {"spec": {"containers": [{"name": "worker", "image": "train"}]}}
PYTORCH = {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": TEMPLATE}]}


def xgboost_workers(n: int) -> dict[str, Any]:
    return {
        "replicaSpecs": [
            {"type": "master", "template": TEMPLATE},
            {"type": "worker", "replicas": n, "template": TEMPLATE},
        ]
    }


XGBOOST = xgboost_workers(100)
COLOSSALAI = {
    "launcher": {"image": "train"},
    "worker": {"replicas": 2, "command": ["train.py"], "template": TEMPLATE},
}
DEEPSPEED = {
    "config": {"run": {"python": ["train.py"]}},
    "worker": {"replicas": 1, "template": TEMPLATE},
}
TF_TEMPLATE = {"spec": {"containers": [{"name": "tensorflow", "image": "train"}]}}
TENSORFLOW = {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": TF_TEMPLATE}]}
MS_TEMPLATE = {"spec": {"containers": [{"name": "mindspore", "image": "train"}]}}
MSJOB = {"msReplicaSpecs": {"Worker": {"replicas": 2, "template": MS_TEMPLATE}}}
TENSORBOARD = {"trainingLogFilesets": ["t9k://pvc/logs/run1"], "image": "tensorboard"}
MPIJOB = {"worker": {"replicas": 2, "cmd": ["./prog"], "template": TEMPLATE}}
DEBUG = {"runMode": {"debug": {"enabled": True}}}
RESUME_ARGS = {"pause": {"resumeSpecs": [{"type": "worker", "args": ["--lr", "1"]}]}}


def merged(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with top-level keys replaced (None: removed)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def job(kind: str, spec: dict[str, Any], name: str = "job") -> dict[str, Any]:
    return {"apiVersion": "v", "kind": kind, "metadata": {"name": name}, "spec": spec}


# -- the cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A rule, the model it is registered on, a passing and a failing object of
    that model, and where in the object the rule's node is."""

    rule: Rule[Any]
    model: type[BaseModel]
    good: dict[str, Any]
    bad: dict[str, Any]
    node: Callable[[dict[str, Any]], Any] = field(default=lambda obj: obj)
    old: dict[str, Any] | None = None
    """For a transition rule: the old object (the CEL's oldSelf), against which
    ``bad`` breaks the rule and ``good`` keeps it."""

    @property
    def id(self) -> str:
        return self.rule.message[:60]


def _key(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda obj: obj[name]


LONG = "j" * 55  # <name>-worker-<i> and <name>-launcher fit in 63 characters; longer do not
CASES: list[Case] = [
    # spec.elastic
    Case(
        elastic.BOUNDS_REQUIRED_RULE,
        elastic.ElasticConfig,
        {"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2},
        {"enabled": True, "minReplicas": 1, "maxReplicas": 4},
    ),
    Case(
        elastic.MIN_MAX_RULE,
        elastic.ElasticConfig,
        {"minReplicas": 2, "maxReplicas": 2},
        {"minReplicas": 3, "maxReplicas": 2},
    ),
    Case(
        elastic.EXPECTED_RULE,
        elastic.ElasticConfig,
        {"minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 4},
        {"minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 5},
    ),
    # spec.runMode
    *(
        Case(
            model.rules[0],
            model,
            {"pause": {"resumeSpecs": [{"type": "worker", "command": ["a"], "args": ["b"]}]}},
            RESUME_ARGS,
        )
        for model in (colossalai.ColossalAIRunMode, deepspeed.DeepSpeedRunMode, mpijob.MPIRunMode)
    ),
    Case(
        specs.RESUME_SPECS_IMMUTABLE_RULE,
        specs.PauseMode,
        {"resumeSpecs": [{"type": "worker", "command": ["a"]}]},
        {"resumeSpecs": [{"type": "worker", "command": ["b"]}]},
        node=_key("resumeSpecs"),
        old={"resumeSpecs": [{"type": "worker", "command": ["a"]}]},
    ),
    Case(
        specs.RESUME_SPECS_REMOVAL_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, runMode={"pause": {"resumeSpecs": []}}),
        merged(PYTORCH, runMode={"pause": {"enabled": False}}),
        old=merged(PYTORCH, runMode={"pause": {"resumeSpecs": []}}),
    ),
    # PyTorchTrainingJob
    Case(
        pytorch.DISTINCT_TYPES_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, replicaSpecs=[{"type": "master", "template": TEMPLATE}] * 1),
        merged(PYTORCH, replicaSpecs=[{"type": "worker", "template": TEMPLATE}] * 2),
        node=_key("replicaSpecs"),
    ),
    Case(
        pytorch.ONE_MASTER_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, replicaSpecs=[{"type": "master", "template": TEMPLATE}]),
        merged(PYTORCH, replicaSpecs=[{"type": "master", "replicas": 2, "template": TEMPLATE}]),
        node=_key("replicaSpecs"),
    ),
    Case(
        pytorch.TOO_MANY_REPLICAS_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, replicaSpecs=[{"type": "worker", "replicas": 5000, "template": TEMPLATE}]),
        merged(
            PYTORCH,
            replicaSpecs=[
                {"type": "worker", "replicas": 5000, "template": TEMPLATE},
                {"type": "ps", "template": TEMPLATE},
            ],
        ),
        node=_key("replicaSpecs"),
    ),
    Case(
        pytorch.ELASTIC_NEEDS_TORCHRUN_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, elastic={"enabled": False}, torchrunConfig={"enabled": False}),
        merged(
            PYTORCH,
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 2, "expectedReplicas": 1},
        ),
    ),
    Case(
        pytorch.POD_NAME_LENGTH_RULE,
        pytorch.PyTorchTrainingJobObject,
        job("PyTorchTrainingJob", merged(PYTORCH, elastic={"maxReplicas": 100}), LONG[:53]),
        job("PyTorchTrainingJob", merged(PYTORCH, elastic={"maxReplicas": 101}), LONG[:53]),
    ),
    # TensorFlowTrainingJob
    Case(
        tensorflow.DISTINCT_TYPES_RULE,
        tensorflow.TensorFlowTrainingJobSpec,
        merged(
            TENSORFLOW,
            replicaSpecs=[
                {"type": "worker", "template": TF_TEMPLATE},
                {"type": "ps", "template": TF_TEMPLATE},
            ],
        ),
        merged(TENSORFLOW, replicaSpecs=[{"type": "worker", "template": TF_TEMPLATE}] * 2),
        node=_key("replicaSpecs"),
    ),
    Case(
        tensorflow.ONE_CHIEF_RULE,
        tensorflow.TensorFlowTrainingJobSpec,
        merged(TENSORFLOW, replicaSpecs=[{"type": "chief", "template": TF_TEMPLATE}]),
        merged(
            TENSORFLOW, replicaSpecs=[{"type": "chief", "replicas": 2, "template": TF_TEMPLATE}]
        ),
        node=_key("replicaSpecs"),
    ),
    Case(
        tensorflow.NEEDS_LEADER_RULE,
        tensorflow.TensorFlowTrainingJobSpec,
        merged(
            TENSORFLOW,
            replicaSpecs=[
                {"type": "ps", "template": TF_TEMPLATE},
                {"type": "worker", "template": TF_TEMPLATE},
            ],
        ),
        merged(
            TENSORFLOW,
            replicaSpecs=[
                {"type": "ps", "template": TF_TEMPLATE},
                {"type": "worker", "replicas": 0, "template": TF_TEMPLATE},
                {"type": "evaluator", "template": TF_TEMPLATE},
            ],
        ),
        node=_key("replicaSpecs"),
    ),
    Case(
        tensorflow.TOO_MANY_REPLICAS_RULE,
        tensorflow.TensorFlowTrainingJobSpec,
        merged(
            TENSORFLOW, replicaSpecs=[{"type": "worker", "replicas": 5000, "template": TF_TEMPLATE}]
        ),
        merged(
            TENSORFLOW,
            replicaSpecs=[
                {"type": "worker", "replicas": 5000, "template": TF_TEMPLATE},
                {"type": "ps", "template": TF_TEMPLATE},
            ],
        ),
        node=_key("replicaSpecs"),
    ),
    Case(
        tensorflow.POD_NAME_LENGTH_RULE,
        tensorflow.TensorFlowTrainingJobObject,
        job("TensorFlowTrainingJob", TENSORFLOW, LONG[:54]),
        job(
            "TensorFlowTrainingJob",
            merged(
                TENSORFLOW,
                replicaSpecs=[{"type": "worker", "replicas": 11, "template": TF_TEMPLATE}],
            ),
            LONG[:54],
        ),
    ),
    # XGBoostTrainingJob
    Case(
        xgboost.ONE_MASTER_RULE,
        xgboost.XGBoostTrainingJobSpec,
        merged(XGBOOST, replicaSpecs=[{"type": "master", "template": TEMPLATE}]),
        merged(XGBOOST, replicaSpecs=[{"type": "master", "replicas": 2, "template": TEMPLATE}]),
        node=_key("replicaSpecs"),
    ),
    Case(
        xgboost.POD_NAME_LENGTH_RULE,
        xgboost.XGBoostTrainingJobObject,
        job("XGBoostTrainingJob", XGBOOST, LONG[:53]),
        job("XGBoostTrainingJob", xgboost_workers(101), LONG[:53]),
    ),
    # ColossalAIJob
    Case(
        colossalai.COMMAND_REQUIRED_RULE,
        colossalai.ColossalAIJobSpec,
        merged(COLOSSALAI, worker={"template": TEMPLATE}, **DEBUG),
        merged(COLOSSALAI, worker={"template": TEMPLATE, "command": []}),
    ),
    Case(
        colossalai_replicas.AUTH_MOUNT_PATH_RULE,
        colossalai.SSHConfig,
        {"authMountPath": "/home/user/.ssh"},
        {"authMountPath": "home/user/.ssh"},
        node=_key("authMountPath"),
    ),
    *(
        Case(
            colossalai_replicas.AUTH_MOUNT_PLACE_RULE,
            colossalai.SSHConfig,
            {"authMountPath": "/home/user/.ssh/"},
            {"authMountPath": bad},
            node=_key("authMountPath"),
        )
        for bad in ("/", "/home//.ssh", "/home/./.ssh", "/root/..", "/tmp/ssh", "/t9k")
    ),
    Case(
        colossalai_replicas.SSHD_PATH_RULE,
        colossalai.SSHConfig,
        {"sshdPath": "/usr/bin/sshd"},
        {"sshdPath": "sshd"},
        node=_key("sshdPath"),
    ),
    Case(
        colossalai.POD_NAME_LENGTH_RULE,
        colossalai.ColossalAIJobObject,
        job("ColossalAIJob", COLOSSALAI, LONG[:54]),
        job("ColossalAIJob", COLOSSALAI, LONG[:55]),
    ),
    Case(
        JOB_NAME_RULE,
        colossalai.ColossalAIJobObject,
        job("ColossalAIJob", COLOSSALAI, "a-1"),
        job("ColossalAIJob", COLOSSALAI, "1-a"),
    ),
    Case(
        tb.TENSORBOARD_NAME_RULE,
        colossalai.ColossalAIJobObject,
        job("ColossalAIJob", merged(COLOSSALAI, tensorboardSpec=TENSORBOARD), LONG[:51]),
        job("ColossalAIJob", merged(COLOSSALAI, tensorboardSpec=TENSORBOARD), LONG[:52]),
    ),
    # MPIJob
    Case(
        mpijob.AUTH_MOUNT_PATH_RULE,
        mpijob.SSHConfig,
        {"sshAuthMountPath": "/home/user/.ssh"},
        {"sshAuthMountPath": "home/user/.ssh"},
        node=_key("sshAuthMountPath"),
    ),
    *(
        Case(
            mpijob.AUTH_PLACE_RULE,
            mpijob.SSHConfig,
            {"sshAuthMountPath": "/home/user/.ssh/"},
            {"sshAuthMountPath": bad},
            node=_key("sshAuthMountPath"),
        )
        for bad in ("/", "/home//.ssh", "/root/..", "/tmp/ssh", "/t9k")
    ),
    Case(
        mpijob.SSHD_PATH_RULE,
        mpijob.SSHConfig,
        {"sshdPath": "/usr/bin/sshd"},
        {"sshdPath": "sshd"},
        node=_key("sshdPath"),
    ),
    Case(
        mpijob.MPI_HOME_RULE,
        mpijob.MPIJobSpec,
        merged(MPIJOB, mpiHome="/usr/local"),
        merged(MPIJOB, mpiHome="usr/local"),
        node=_key("mpiHome"),
    ),
    *(
        Case(
            mpijob.MCA_KEYS_RULE,
            mpijob.MPIJobSpec,
            merged(MPIJOB, mca={"btl": "^openib", "plm_rsh_args": "-p 2222"}),
            merged(MPIJOB, mca={bad: "x"}),
            node=_key("mca"),
        )
        for bad in ("", "btl pml", "--mca", "btl;rm")
    ),
    Case(
        mpijob.NAMELESS_CONTAINER_RULE,
        mpijob.WorkerConfig,
        {"template": {"spec": {"containers": [{"image": "a"}]}}},
        {"template": {"spec": {"containers": [{"name": "mpi-worker"}, {"image": "b"}]}}},
        node=lambda w: w["template"]["spec"]["containers"],
    ),
    Case(
        mpijob.POD_NAME_LENGTH_RULE,
        mpijob.MPIJobObject,
        job("MPIJob", MPIJOB, LONG[:54]),
        job("MPIJob", MPIJOB, LONG[:55]),
    ),
    # DeepSpeedJob
    Case(
        deepspeed.RUN_REQUIRED_RULE,
        deepspeed.DeepSpeedJobSpec,
        merged(DEEPSPEED, config=None, **DEBUG),
        merged(DEEPSPEED, config={"slotsPerWorker": 2}),
    ),
    *(
        Case(
            deepspeed_worker.RESERVED_MOUNTS_RULE,
            deepspeed.WorkerSpec,
            {"template": {"spec": {"containers": good}}},
            {"template": {"spec": {"containers": bad}}},
            node=_key("template"),
        )
        for good, bad in (
            (
                [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/root/.sshx"}]}],
                [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/root/.ssh/k"}]}],
            ),
            (
                [
                    {"name": "sidecar", "volumeMounts": [{"name": "v", "mountPath": "/t9k"}]},
                    {"name": "worker"},
                ],
                [
                    {"name": "sidecar"},
                    {
                        "name": "worker",
                        "volumeMounts": [{"name": "v", "mountPath": "/t9k/hostfile"}],
                    },
                ],
            ),
        )
    ),
    Case(
        deepspeed.POD_NAME_LENGTH_RULE,
        deepspeed.DeepSpeedJobObject,
        job("DeepSpeedJob", merged(DEEPSPEED, elastic={"maxReplicas": 10}), LONG[:54]),
        job("DeepSpeedJob", merged(DEEPSPEED, elastic={"maxReplicas": 11}), LONG[:54]),
    ),
    Case(
        deepspeed_config.RESERVED_ARGS_RULE,
        deepspeed_config.DeepSpeedConfig,
        {"otherArgs": ["--master_port=1", "--hostfile_x"]},
        {"otherArgs": ["--master_port=1", "--hostfile=/h"]},
        node=_key("otherArgs"),
    ),
    *(
        Case(
            deepspeed_config.LAUNCHER_PDSH_RULE,
            deepspeed_config.DeepSpeedConfig,
            {"otherArgs": good},
            {"otherArgs": bad},
            node=_key("otherArgs"),
        )
        for good, bad in (
            (["--launcher", "PDSH"], ["--launcher", "openmpi"]),
            (["--launcher=pdsh"], ["--launcher=slurm"]),
            ([], ["--launcher"]),
            (["--launcher", "pdsh"], ["--launcher", "pdsh", "--launcher", "pdsh"]),
        )
    ),
    # MSJob
    Case(
        msjob.MINDSPORE_CONTAINER_RULE,
        msjob.MSReplicaSpec,
        {"template": MS_TEMPLATE},
        {"template": TEMPLATE},
        node=_key("template"),
    ),
    Case(
        msjob.UNKNOWN_ROLE_RULE,
        msjob.MSJobSpec,
        MSJOB,
        {"msReplicaSpecs": {"Chief": {"template": MS_TEMPLATE}}},
        node=_key("msReplicaSpecs"),
    ),
    Case(
        msjob.ONE_SCHEDULER_RULE,
        msjob.MSJobSpec,
        {"msReplicaSpecs": {"Scheduler": {"template": MS_TEMPLATE}}},
        {"msReplicaSpecs": {"Scheduler": {"replicas": 2, "template": MS_TEMPLATE}}},
        node=_key("msReplicaSpecs"),
    ),
    Case(
        msjob.TOO_MANY_REPLICAS_RULE,
        msjob.MSJobSpec,
        {"msReplicaSpecs": {"Worker": {"replicas": 5000, "template": MS_TEMPLATE}}},
        {
            "msReplicaSpecs": {
                "Worker": {"replicas": 5000, "template": MS_TEMPLATE},
                "PS": {"template": MS_TEMPLATE},
            }
        },
        node=_key("msReplicaSpecs"),
    ),
    Case(
        msjob.POD_NAME_LENGTH_RULE,
        msjob.MSJobObject,
        job("MSJob", MSJOB, LONG[:54]),
        job(
            "MSJob",
            merged(MSJOB, msReplicaSpecs={"Worker": {"replicas": 11, "template": MS_TEMPLATE}}),
            LONG[:54],
        ),
    ),
    # GenericJob
    Case(
        genericjob.SUCCESS_RULES_RULE,
        genericjob.GenericJobSpec,
        merged(PYTORCH, successRules=[{"worker": [0, 1]}]),
        merged(PYTORCH, successRules=[{"worker": [0, 2]}]),
    ),
    Case(
        genericjob.FAILURE_RULES_RULE,
        genericjob.GenericJobSpec,
        merged(PYTORCH, failureRules=[{"worker": [1]}]),
        merged(PYTORCH, failureRules=[{"server": [0]}]),
    ),
    Case(
        genericjob.DISTINCT_PORTS_RULE,
        genericjob.ServiceOption,
        {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 1}]},
        {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
    ),
    Case(
        genericjob.POD_NAME_LENGTH_RULE,
        genericjob.GenericJobObject,
        job("GenericJob", PYTORCH, LONG[:54]),
        job("GenericJob", PYTORCH, LONG[:55]),
    ),
    # TensorBoard
    *(
        Case(
            rule,
            tb.TensorBoardSpec,
            TENSORBOARD,
            merged(TENSORBOARD, trainingLogFilesets=[bad]),
            node=lambda obj: obj["trainingLogFilesets"][0],
        )
        for rule, bad in zip(
            (tb.FILESET_RULES[0], *tb.FILESET_RULES),
            (
                "s3://bucket/logs",
                "t9k://pvc/logs/a\nb",
                "t9k://pvc/" + "c" * 254 + "/logs",
                "t9k://pvc/logs/a,b",
                "t9k://pvc/logs/a/../../etc",
            ),
            strict=True,
        )
    ),
    Case(
        tb.TensorBoardObject.rules[0],
        tb.TensorBoardObject,
        job("TensorBoard", TENSORBOARD, "board"),
        job("TensorBoard", TENSORBOARD, "Board"),
    ),
    Case(
        tb.TensorBoardObject.rules[1],
        tb.TensorBoardObject,
        job("TensorBoard", TENSORBOARD, LONG[:51]),
        job("TensorBoard", TENSORBOARD, LONG[:52]),
    ),
]


# -- the Python side ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_model_takes_the_passing_example_and_refuses_the_failing_one(case: Case) -> None:
    case.model.model_validate(case.good)
    if case.rule.holds is None:
        # A transition rule: a model sees one version of an object, so both parse.
        case.model.model_validate(case.bad)
        return
    with pytest.raises(ValidationError) as info:
        case.model.model_validate(case.bad)
    assert case.rule.message in str(info.value)


def test_a_job_whose_tensorboard_service_name_would_not_fit_is_refused_by_the_model() -> None:
    """The Python side of the root rule that, before, only the API server checked."""
    spec = merged(PYTORCH, tensorboardSpec=TENSORBOARD)
    pytorch.PyTorchTrainingJobObject.model_validate(job("PyTorchTrainingJob", spec, LONG[:51]))
    with pytest.raises(ValidationError, match=re.escape(tb.MSG_JOB_NAME_LENGTH)):
        pytorch.PyTorchTrainingJobObject.model_validate(job("PyTorchTrainingJob", spec, LONG[:52]))


# -- the CEL side --------------------------------------------------------------------------------


def _cel(case: Case, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    celpy = pytest.importorskip("celpy")
    from celpy import celtypes

    def index_of(items: Any, item: Any) -> Any:
        return celtypes.IntType(list(items).index(item) if item in items else -1)

    def last_index_of(items: Any, item: Any) -> Any:
        found = [i for i, x in enumerate(items) if x == item]
        return celtypes.IntType(found[-1] if found else -1)

    # The Kubernetes CEL extensions the rules use, and optionalOldSelf's optional.
    functions = {
        "sum": lambda items: celtypes.IntType(sum(items)),
        "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "hasValue": lambda o: celtypes.BoolType(o is not None),
        "value": lambda o: o,
    }
    env = celpy.Environment()
    program = env.program(env.compile(case.rule.cel), functions=functions)
    activation: dict[str, Any] = {"self": celpy.json_to_cel(case.node(obj))}
    if case.old is not None:
        activation["oldSelf"] = celpy.json_to_cel(case.node(old)) if old is not None else None
    result = program.evaluate(activation)
    assert isinstance(result, celtypes.BoolType), result
    return bool(result)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_cel_passes_the_passing_example_and_fails_the_failing_one(case: Case) -> None:
    assert _cel(case, case.good, case.old)
    assert not _cel(case, case.bad, case.old)


def _cel_rules(node: Any) -> Iterator[tuple[str, str]]:
    """The (rule, message) of every CEL rule anywhere in ``node``."""
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", []):
            yield rule["rule"], rule["message"]
        for value in node.values():
            yield from _cel_rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _cel_rules(value)


def test_the_cases_cover_every_rule_of_every_crd() -> None:
    in_crds = {rule for info in load_generator().KINDS for rule in _cel_rules(committed_crd(info))}
    covered = {(c.rule.cel, c.rule.message) for c in CASES}
    assert in_crds - covered == set()
    assert covered - in_crds == set()
