"""Every Rule's two sides agree: its CEL (what the API server checks) and its
Python side (what the models check on parsing), on hand-written examples.

Each case is one rule with a passing and a failing object of the model the
rule is registered on, in the wire shape: a kind's own rules' cases are its
``RULES`` in tests/kinds/<kind>.py, the rules no one kind owns (elastic, runMode,
the job's name, the TensorBoard) are here. The Python side parses both with the
model (the failing one must be refused with the rule's message); the CEL side
evaluates the rule's expression with cel-python on the node the rule sits at
(``self``), with the few Kubernetes CEL extensions the rules use written here
(cel-python is a test extra: in a virtualenv made before it was, the CEL half
skips, which fails under CI=true). A last test checks that the cases cover
every rule of every generated CRD.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api import colossalai, deepspeed, elastic, mpijob, pytorch, specs
from t9k_operator.api import tensorboard as tb
from t9k_operator.api import tensorboard_logdir as logdir
from t9k_operator.api.crd import JOB_NAME_RULE
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE
from tests.kinds import kind_table
from tests.kinds.colossalai import COLOSSALAI
from tests.kinds.common import LONG, RuleCase, at_key, merged, wire_job
from tests.kinds.pytorch import PYTORCH
from tests.unit.api.helpers import committed_crd, load_generator

# -- objects in the wire shape ----------------------------------------------------------------

TENSORBOARD = {"trainingLogFilesets": ["t9k://pvc/logs/run1"], "image": "tensorboard"}
PVC_LOGS = {"pvc": [{"name": "tutorial", "subPath": ["train/logs"]}]}
S3_LOGS = {"s3": {"secretRef": {"name": "my-s3-env"}, "uri": ["s3://folder/"]}}
HTTP_LOGS = {"http": {"url": ["http://files.example/logs/events.out.tfevents.1"]}}


def _logdir_case(rule: Any, good: dict[str, Any], bad: dict[str, Any], at: Any) -> RuleCase:
    """A case of a rule on one string of logDir (``at``: the string's node)."""
    return RuleCase(rule, logdir.TensorBoardDataSource, good, bad, node=at)


_SUB_PATH = lambda d: d["pvc"][0]["subPath"][0]  # noqa: E731
_CLAIM = lambda d: d["pvc"][0]["name"]  # noqa: E731
_S3_URI = lambda d: d["s3"]["uri"][0]  # noqa: E731
_HTTP_URL = lambda d: d["http"]["url"][0]  # noqa: E731
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
RESUME_ARGS = {"pause": {"resumeSpecs": [{"type": "worker", "args": ["--lr", "1"]}]}}

# -- the cases ------------------------------------------------------------------------------------

SHARED: list[RuleCase] = [
    # spec.elastic
    RuleCase(
        elastic.BOUNDS_REQUIRED_RULE,
        elastic.ElasticConfig,
        {"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2},
        {"enabled": True, "minReplicas": 1, "maxReplicas": 4},
    ),
    RuleCase(
        elastic.MIN_MAX_RULE,
        elastic.ElasticConfig,
        {"minReplicas": 2, "maxReplicas": 2},
        {"minReplicas": 3, "maxReplicas": 2},
    ),
    RuleCase(
        elastic.EXPECTED_RULE,
        elastic.ElasticConfig,
        {"minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 4},
        {"minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 5},
    ),
    # spec.runMode
    *(
        RuleCase(
            model.rules[0],
            model,
            {"pause": {"resumeSpecs": [{"type": "worker", "command": ["a"], "args": ["b"]}]}},
            RESUME_ARGS,
        )
        for model in (colossalai.ColossalAIRunMode, deepspeed.DeepSpeedRunMode, mpijob.MPIRunMode)
    ),
    RuleCase(
        specs.RESUME_SPECS_IMMUTABLE_RULE,
        specs.PauseMode,
        {"resumeSpecs": [{"type": "worker", "command": ["a"]}]},
        {"resumeSpecs": [{"type": "worker", "command": ["b"]}]},
        node=at_key("resumeSpecs"),
        old={"resumeSpecs": [{"type": "worker", "command": ["a"]}]},
    ),
    RuleCase(
        specs.RESUME_SPECS_REMOVAL_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, runMode={"pause": {"resumeSpecs": []}}),
        merged(PYTORCH, runMode={"pause": {"enabled": False}}),
        old=merged(PYTORCH, runMode={"pause": {"resumeSpecs": []}}),
    ),
    # The rules every job object has, on one kind's
    RuleCase(
        JOB_NAME_RULE,
        colossalai.ColossalAIJobObject,
        wire_job("ColossalAIJob", COLOSSALAI, "a-1"),
        wire_job("ColossalAIJob", COLOSSALAI, "1-a"),
    ),
    RuleCase(
        tb.TENSORBOARD_NAME_RULE,
        colossalai.ColossalAIJobObject,
        wire_job("ColossalAIJob", merged(COLOSSALAI, tensorboardSpec=TENSORBOARD), LONG[:51]),
        wire_job("ColossalAIJob", merged(COLOSSALAI, tensorboardSpec=TENSORBOARD), LONG[:52]),
    ),
    RuleCase(
        MANAGED_BY_IMMUTABLE_RULE,
        colossalai.ColossalAIJobObject,
        wire_job("ColossalAIJob", merged(COLOSSALAI, managedBy=MULTIKUEUE), "a"),
        wire_job("ColossalAIJob", COLOSSALAI, "a"),
        old=wire_job("ColossalAIJob", merged(COLOSSALAI, managedBy=MULTIKUEUE), "a"),
    ),
    # TensorBoard
    *(
        RuleCase(
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
    # TensorBoard: logDir or trainingLogFilesets; logDir's own rules
    RuleCase(
        tb.ONE_LAYOUT_RULE,
        tb.TensorBoardSpec,
        {"logDir": PVC_LOGS},
        {"logDir": PVC_LOGS, "trainingLogFilesets": ["t9k://pvc/tutorial/train/logs"]},
    ),
    RuleCase(logdir.ONE_SOURCE_RULE, logdir.TensorBoardDataSource, S3_LOGS, PVC_LOGS | HTTP_LOGS),
    _logdir_case(
        logdir.NAME_RULE, PVC_LOGS, {"pvc": [{"name": "Tutorial", "subPath": ["a"]}]}, _CLAIM
    ),
    _logdir_case(
        logdir.NEWLINE_RULE, PVC_LOGS, {"pvc": [{"name": "t", "subPath": ["a\nb"]}]}, _SUB_PATH
    ),
    _logdir_case(
        logdir.COMMA_RULE, PVC_LOGS, {"pvc": [{"name": "t", "subPath": ["a,b"]}]}, _SUB_PATH
    ),
    _logdir_case(
        logdir.PARENT_RULE, PVC_LOGS, {"pvc": [{"name": "t", "subPath": ["a/../../x"]}]}, _SUB_PATH
    ),
    _logdir_case(
        logdir.S3_URI_RULE,
        S3_LOGS,
        {"s3": {"secretRef": {"name": "s"}, "uri": ["https://folder/"]}},
        _S3_URI,
    ),
    _logdir_case(
        logdir.HTTP_URL_RULE, HTTP_LOGS, {"http": {"url": ["ftp://files.example/x"]}}, _HTTP_URL
    ),
    RuleCase(
        tb.TensorBoardObject.rules[0],
        tb.TensorBoardObject,
        wire_job("TensorBoard", TENSORBOARD, "board"),
        wire_job("TensorBoard", TENSORBOARD, "Board"),
    ),
    RuleCase(
        tb.TensorBoardObject.rules[1],
        tb.TensorBoardObject,
        wire_job("TensorBoard", TENSORBOARD, LONG[:51]),
        wire_job("TensorBoard", TENSORBOARD, LONG[:52]),
    ),
]
"""The cases of the rules no one kind owns (each kind's are its ``RULES``)."""

KIND_CASES: dict[str, list[RuleCase]] = kind_table("RULES")
"""Each kind's rules' cases: its ``RULES`` in tests/kinds/<kind>.py."""
CASES = [*SHARED, *(case for cases in KIND_CASES.values() for case in cases)]
IDS = [c.id for c in SHARED] + [f"{k}: {c.id}" for k, cases in KIND_CASES.items() for c in cases]


# -- the Python side ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_model_takes_the_passing_example_and_refuses_the_failing_one(case: RuleCase) -> None:
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
    pytorch.PyTorchTrainingJobObject.model_validate(wire_job("PyTorchTrainingJob", spec, LONG[:51]))
    with pytest.raises(ValidationError, match=re.escape(tb.MSG_JOB_NAME_LENGTH)):
        pytorch.PyTorchTrainingJobObject.model_validate(
            wire_job("PyTorchTrainingJob", spec, LONG[:52])
        )


# -- the CEL side --------------------------------------------------------------------------------


def _cel(case: RuleCase, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
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


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_cel_passes_the_passing_example_and_fails_the_failing_one(case: RuleCase) -> None:
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
