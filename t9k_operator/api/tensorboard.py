"""The TensorBoard kind (tensorstack.dev/v1beta1): spec, status, CRD; and the
``tensorboardSpec`` / ``status.tensorboard`` fields of the T9k job kinds.

A TensorBoard serves TensorBoard on training logs kept in PersistentVolumeClaims
of its namespace, in S3, or behind HTTP URLs. Users create one on its own, or give a T9k job a
``tensorboardSpec``: the job then owns a TensorBoard of its own name, built
from that very spec (:class:`TensorBoardSpec` is both), and reports it in
``status.tensorboard`` (:class:`TensorBoardDependentStatus`, the shape of the
T9k product docs: action, dependent, note, ready, reason, type), which
:class:`T9kJobStatus` adds to the job status every T9k kind writes.

It is not a job kind: it has no replicas, restarts or phases, and is served by
a controller of its own (``integrations/tensorboard/controller.py``); the registry lists its
CRD beside the job kinds' (``registry.served_crds``).

Where the logs are is said in one of two layouts, as T9k's manuals have
them: ``spec.logDir`` (2025: claims, S3 or HTTP; ``api/tensorboard_logdir.py``)
or the older ``spec.trainingLogFilesets`` (``t9k://pvc/<claim>/<path>`` URLs;
``api/tensorboard_filesets.py``); exactly one of the two. As for the job
kinds, each rule is a :class:`~t9k_operator.api.rules.Rule`: its CEL checks it
at admission, its Python side on parsing, with the same message.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    CrdInfo,
    JobObject,
    PrinterColumn,
    dns_1035_name_rule,
    name_rule,
    pod_name_length_rule,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import DNS_LABEL_MAX, KUBERNETES_SCHEMA, RESOURCE_REQUIREMENTS
from t9k_operator.api.status import JobStatus
from t9k_operator.api.tensorboard_filesets import (
    FILESET_RULES,
    FILESET_SCHEME,
    MAX_FILESETS,
    MSG_CLAIM_TOO_LONG,
    MSG_DUPLICATE_FILESET,
    MSG_FILESET_COMMA,
    MSG_FILESET_FORM,
    MSG_FILESET_PARENT,
    Fileset,
    fileset_error,
)
from t9k_operator.api.tensorboard_logdir import SchedulePolicy, TensorBoardDataSource

__all__ = [  # the fileset rules, long imported from here
    "FILESET_RULES",
    "FILESET_SCHEME",
    "MSG_CLAIM_TOO_LONG",
    "MSG_DUPLICATE_FILESET",
    "MSG_FILESET_COMMA",
    "MSG_FILESET_FORM",
    "MSG_FILESET_PARENT",
    "fileset_error",
]

GROUP = "tensorstack.dev"
VERSION = "v1beta1"
KIND = "TensorBoard"
PLURAL = "tensorboards"
API_VERSION = f"{GROUP}/{VERSION}"

SERVICE_SUFFIX = "-tensorboard"
"""The TensorBoard's Service and pod are ``<name>-tensorboard`` (a job's headless
Service already has the job's name, which is also its TensorBoard's)."""
MAX_NAME = DNS_LABEL_MAX - len(SERVICE_SUFFIX)
"""The longest TensorBoard name whose Service name fits in a DNS label."""

MSG_NAME = (
    "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting "
    "with a letter): it also names the TensorBoard's Service"
)
MSG_NAME_LENGTH = (
    f"metadata.name is too long: a TensorBoard's name has at most {MAX_NAME} characters, "
    f"so that its Service <name>{SERVICE_SUFFIX} fits in 63"
)
MSG_JOB_NAME_LENGTH = (
    f"metadata.name is too long for spec.tensorboardSpec: the job's TensorBoard takes the "
    f"job's name, which then has at most {MAX_NAME} characters (its Service "
    f"<name>{SERVICE_SUFFIX} must fit in 63)"
)


# -- spec ------------------------------------------------------------------------------


MSG_ONE_LAYOUT = (
    "say where the logs are once: logDir (pvc, s3 or http) or, in the older layout, "
    "trainingLogFilesets; exactly one of the two"
)
ONE_LAYOUT_RULE: Rule[TensorBoardSpec] = Rule(
    "has(self.logDir) != has(self.trainingLogFilesets)",
    MSG_ONE_LAYOUT,
    lambda spec: (spec.log_dir is None) != (spec.training_log_filesets is None),
)
DEFAULT_IMAGE = "tensorflow/tensorflow:2.14.0"


class TensorBoardSpec(T9kModel):
    """A TensorBoard on training logs (also a job's tensorboardSpec)."""

    rules = (ONE_LAYOUT_RULE,)

    log_dir: TensorBoardDataSource | None = Field(
        default=None,
        description=(
            "Where the training logs (TensorBoard event files) are: exactly one of pvc "
            "(claims of the namespace and directories in them), s3 (S3 URIs and a Secret "
            "with the credentials) and http (URLs of event files). Give this or "
            "trainingLogFilesets, not both."
        ),
    )
    training_log_filesets: list[Fileset] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_FILESETS,
        description=(
            "The older layout of logDir.pvc: URLs of the form t9k://pvc/<claim>/<path>: a "
            "PersistentVolumeClaim of the namespace, mounted read-only, and a directory in "
            "it (none: the whole claim). No other form is served. Each fileset is one "
            "named run group, <claim>/<path> (TensorBoard's --logdir_spec); the "
            "subdirectories holding event files are its runs. Give this or logDir."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    image: str = Field(
        default=DEFAULT_IMAGE,
        min_length=1,
        max_length=1024,
        description=(
            "Image of the TensorBoard; it must have the tensorboard command on its PATH "
            "(e.g. a tensorflow/tensorflow image), and python3 for logDir.http. For "
            "logDir.s3 its TensorBoard must read s3:// URIs: TensorBoard without "
            "TensorFlow, with boto3 (a tensorflow/tensorflow image does not). It runs "
            "`tensorboard --logdir_spec <runs> --host 0.0.0.0 --port 6006`."
        ),
    )
    suspend: bool = Field(
        default_factory=lambda: False,  # unset means false; the API server adds nothing
        description=(
            "Stop serving: the TensorBoard's pod is deleted; its Service and status stay, "
            "and setting it back to false starts the same TensorBoard again."
        ),
    )
    scheduler: SchedulePolicy | None = Field(
        default=None,
        description="Which scheduler places the TensorBoard's pod. Unset: the default one.",
    )
    resources: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Compute resources of the TensorBoard's container (Kubernetes "
            "ResourceRequirements: limits and requests), kept as written. Unset: none."
        ),
        json_schema_extra={KUBERNETES_SCHEMA: RESOURCE_REQUIREMENTS},
    )

    @field_validator("training_log_filesets")
    @classmethod
    def _distinct(cls, filesets: list[str] | None) -> list[str] | None:
        if filesets is not None and len(set(filesets)) != len(filesets):
            raise ValueError(MSG_DUPLICATE_FILESET)
        return filesets


def tensorboard_spec_field() -> Any:
    """``spec.tensorboardSpec`` of a T9k job kind."""
    return Field(
        default=None,
        description=(
            "A TensorBoard on the job's training logs. The operator creates a TensorBoard "
            "(tensorstack.dev/v1beta1) of the job's name from this spec, owned by the job "
            "(deleting the job deletes it), keeps it while the job is paused and after it "
            "has finished, keeps it equal to this spec, and deletes it when the field is "
            "removed. Its state is in status.tensorboard; a TensorBoard that cannot start "
            "never fails the job."
        ),
    )


TENSORBOARD_NAME_RULE = name_rule(
    f"!has(self.spec.tensorboardSpec) || size(self.metadata.name) <= {MAX_NAME}",
    MSG_JOB_NAME_LENGTH,
    lambda job: job.spec.tensorboard_spec is None or len(job.name) <= MAX_NAME,
)
"""A root rule of a T9k job kind: its TensorBoard's Service must fit."""


def t9k_job_rules(pod_name_length: Rule[Any]) -> tuple[Rule[Any], ...]:
    """The root rules of a T9k job kind with a TensorBoard: its name is a DNS
    label, every pod name fits (``pod_name_length``), its TensorBoard's fits, and
    ``spec.managedBy`` stays as created."""
    return (JOB_NAME_RULE, pod_name_length, TENSORBOARD_NAME_RULE, MANAGED_BY_IMMUTABLE_RULE)


# -- status ---------------------------------------------------------------------------

READY = "Ready"
"""The one condition type of a TensorBoard."""

SUSPENDED = "Suspended"
"""The Ready condition's reason while ``spec.suspend`` holds."""
QUEUED = "Queued"
"""Reason of the Ready condition while the pod waits in the queue the spec names."""
PROGRESS_REASONS = frozenset(
    {"Ready", "Creating", "Pending", "Starting", "Replacing", SUSPENDED, QUEUED}
)
"""Reasons of the Ready condition that mean "on its way" (or there, or stopped on
request); any other (Unschedulable, ImagePullBackOff, CrashLoopBackOff,
FailedCreate, ...) means the TensorBoard is in trouble: a Warning."""


class TensorBoardCondition(T9kModel):
    """Whether the TensorBoard serves, and why not."""

    type: Literal["Ready"] = Field(description="Type of the condition: Ready.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(
        default="",
        description=(
            "Ready; on its way: Creating, Pending, Starting, Replacing; Suspended "
            "(spec.suspend); in trouble: "
            "Unschedulable (e.g. its claim does not exist), the container's waiting reason "
            "(ImagePullBackOff, CrashLoopBackOff, ...), PodFailed, FailedCreate, "
            "NameConflict, InvalidSpec."
        ),
    )
    message: str = Field(default="", description="Human-readable detail.")
    last_transition_time: str | None = Field(
        default=None, description="When status last changed (RFC 3339)."
    )


class TensorBoardRun(T9kModel):
    """One run group: a place of logs, as TensorBoard names it."""

    name: str = Field(
        description=(
            "The run group's name in TensorBoard: <claim>/<path>, <bucket>/<prefix>, or "
            "the URL without its scheme."
        )
    )
    fileset: str = Field(
        description=(
            "The place it serves: a fileset (t9k://pvc/<claim>/<path>), an S3 URI or an HTTP URL."
        )
    )
    path: str = Field(
        description="Where TensorBoard reads it: a path in its container, or the S3 URI."
    )


class TensorBoardStatus(T9kModel):
    """Observed state of a TensorBoard, written by the operator."""

    observed_generation: int | None = Field(
        default=None, description="The metadata.generation of the spec this status describes."
    )
    conditions: list[TensorBoardCondition] = Field(
        default=[], description="The Ready condition: whether TensorBoard serves, and why not."
    )
    pod: str | None = Field(default=None, description="The TensorBoard's pod.")
    service: str | None = Field(default=None, description="The TensorBoard's Service.")
    url: str | None = Field(default=None, description="Its address inside the cluster.")
    port_forward: str | None = Field(
        default=None,
        description=(
            "How to reach it from your machine: run this kubectl command, then open "
            "http://127.0.0.1:6006."
        ),
    )
    runs: list[TensorBoardRun] = Field(
        default=[], description="The run groups TensorBoard serves, one per place of logs."
    )


class TensorBoardObject(JobObject[TensorBoardSpec, TensorBoardStatus]):
    """A TensorBoard as stored by the API server (the shared object model: apiVersion,
    kind, metadata, spec, status)."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        dns_1035_name_rule(MSG_NAME),
        pod_name_length_rule(f"size(self.metadata.name) <= {MAX_NAME}", MSG_NAME_LENGTH),
    )

    def pod_names_fit(self) -> bool:
        return len(self.name) <= MAX_NAME


# -- a job's status.tensorboard ----------------------------------------------------------


class TensorBoardDependent(T9kModel):
    """Reference to the TensorBoard object created for the job."""

    api_version: str | None = Field(default=None, description="API version of the TensorBoard.")
    kind: str | None = Field(default=None, description="Kind of the object (TensorBoard).")
    name: str | None = Field(default=None, description="Name of the TensorBoard.")
    namespace: str | None = Field(default=None, description="Namespace of the TensorBoard.")
    uid: str | None = Field(
        default=None, description="UID of the TensorBoard (once it has been created)."
    )


class TensorBoardDependentStatus(T9kModel):
    """State of the job's TensorBoard."""

    action: str | None = Field(
        default=None,
        description=(
            "What the operator did to the TensorBoard in its last pass: Create, Update "
            "(brought it in line with spec.tensorboardSpec) or NOP."
        ),
    )
    dependent: TensorBoardDependent | None = Field(
        default=None, description="The TensorBoard object."
    )
    note: str | None = Field(
        default=None,
        description="Human-readable state, e.g. TensorBoard [<name>] is ready, or why not.",
    )
    ready: bool | None = Field(default=None, description="Whether the TensorBoard is ready.")
    reason: str | None = Field(
        default=None,
        description="DependentReady, DependentCreating, DependentNotReady or DependentFailed.",
    )
    type: str | None = Field(
        default=None, description="Normal, or Warning when the TensorBoard is in trouble."
    )


class T9kJobStatus(JobStatus):
    """The status of a T9k job kind: :class:`JobStatus` and ``status.tensorboard``.
    Each kind subclasses it under its own name, whose docstring describes the
    kind's status in its CRD."""

    tensorboard: TensorBoardDependentStatus | None = Field(
        default=None,
        description=(
            "State of the job's TensorBoard (spec.tensorboardSpec), as last seen: ready or "
            "why not. Absent when the job has none."
        ),
    )


# -- the CRD -----------------------------------------------------------------------------

_READY = '.status.conditions[?(@.type=="Ready")]'
CRD = CrdInfo(
    group=GROUP,
    version=VERSION,
    kind=KIND,
    plural=PLURAL,
    singular="tensorboard",
    short_names=("tb",),
    spec_model=TensorBoardSpec,
    status_model=TensorBoardStatus,
    description=(
        "TensorBoard serves TensorBoard on training logs kept in PersistentVolumeClaims "
        "(mounted read-only), in S3 or behind HTTP URLs, behind a Service; reach it with "
        "the kubectl port-forward command in status.portForward. A T9k job with "
        "spec.tensorboardSpec owns one of its name."
    ),
    printer_columns=(
        PrinterColumn("Ready", "string", f"{_READY}.status", "Whether TensorBoard serves."),
        PrinterColumn("Reason", "string", f"{_READY}.reason", "Why it serves or not."),
        PrinterColumn(
            "Port-Forward",
            "string",
            ".status.portForward",
            "Run this, then open http://127.0.0.1:6006.",
        ),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    root_rules=TensorBoardObject.rules,
)
