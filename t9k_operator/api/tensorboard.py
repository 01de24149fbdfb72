"""The TensorBoard kind (tensorstack.dev/v1beta1): spec, status, CRD; and the
``tensorboardSpec`` / ``status.tensorboard`` fields of the T9k job kinds.

A TensorBoard serves TensorBoard on training logs kept in PersistentVolumeClaims
of its namespace. Users create one on its own, or give a T9k job a
``tensorboardSpec``: the job then owns a TensorBoard of its own name, built
from that very spec (:class:`TensorBoardSpec` is both), and reports it in
``status.tensorboard`` (:class:`TensorBoardDependentStatus`, the shape of the
T9k product docs: action, dependent, note, ready, reason, type), which
:class:`T9kJobStatus` adds to the job status every T9k kind writes.

It is not a job kind: it has no replicas, restarts or phases, and is served by
a controller of its own (``integrations/tensorboard/controller.py``); the registry lists its
CRD beside the job kinds' (``registry.served_crds``).

Training log filesets are URLs. The one form served is
``t9k://pvc/<claim>/<path>``: a claim of the TensorBoard's namespace, mounted
read-only, and a directory in it (none: the whole claim). Every other form
(S3, http, a bare path) is refused at admission with :data:`MSG_FILESET_FORM`.
As for the job kinds, each rule is a :class:`~t9k_operator.api.rules.Rule`:
its CEL checks it at admission, its Python side on parsing, with the same
message.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

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
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import DNS_LABEL_MAX, KUBERNETES_SCHEMA, RESOURCE_REQUIREMENTS
from t9k_operator.api.status import JobStatus

GROUP = "tensorstack.dev"
VERSION = "v1beta1"
KIND = "TensorBoard"
PLURAL = "tensorboards"
API_VERSION = f"{GROUP}/{VERSION}"

FILESET_SCHEME = "t9k://pvc/"
"""The one fileset form served: ``t9k://pvc/<claim>/<path>``."""
MAX_FILESETS = 32
MAX_FILESET_LENGTH = 1024
MAX_CLAIM_LENGTH = 253
SERVICE_SUFFIX = "-tensorboard"
"""The TensorBoard's Service and pod are ``<name>-tensorboard`` (a job's headless
Service already has the job's name, which is also its TensorBoard's)."""
MAX_NAME = DNS_LABEL_MAX - len(SERVICE_SUFFIX)
"""The longest TensorBoard name whose Service name fits in a DNS label."""

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
CLAIM_PATTERN = f"{_LABEL}([.]{_LABEL})*"
"""A PersistentVolumeClaim name: a lower-case DNS subdomain."""
FILESET_PATTERN = f"^t9k://pvc/{CLAIM_PATTERN}(/.*)?$"
_CLAIM_LENGTH_PATTERN = f"^t9k://pvc/[^/]{{0,{MAX_CLAIM_LENGTH}}}(/|$)"
_PARENT_PATTERN = "(^|/)[.][.](/|$)"

MSG_FILESET_FORM = (
    "a training log fileset must be t9k://pvc/<claim>/<path>: a PersistentVolumeClaim of "
    "the namespace (a lower-case DNS name) and a directory in it (none: the whole claim); "
    "other forms (S3, http, a path in the image) are not served"
)
MSG_FILESET_COMMA = (
    "a training log fileset must not contain a comma: TensorBoard's --logdir_spec "
    "separates filesets with commas"
)
MSG_FILESET_PARENT = (
    "a training log fileset's path must not contain a '..' segment: it stays inside its claim"
)
MSG_CLAIM_TOO_LONG = f"a claim name has at most {MAX_CLAIM_LENGTH} characters"
MSG_DUPLICATE_FILESET = "each training log fileset may appear only once"
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


FILESET_RULES: tuple[Rule[str], ...] = (
    Rule(
        f"self.matches('{FILESET_PATTERN}')",
        MSG_FILESET_FORM,
        # As RE2 (the API server's) does, ``.`` stops at a newline.
        lambda url: re.fullmatch(FILESET_PATTERN, url) is not None,
    ),
    Rule(
        # Only for the served form: any other already has its message.
        f"!self.startsWith('{FILESET_SCHEME}') || self.matches('{_CLAIM_LENGTH_PATTERN}')",
        MSG_CLAIM_TOO_LONG,
        lambda url: (
            not url.startswith(FILESET_SCHEME) or re.match(_CLAIM_LENGTH_PATTERN, url) is not None
        ),
    ),
    Rule("!self.contains(',')", MSG_FILESET_COMMA, lambda url: "," not in url),
    Rule(
        f"!self.matches('{_PARENT_PATTERN}')",
        MSG_FILESET_PARENT,
        lambda url: re.search(_PARENT_PATTERN, url) is None,
    ),
)
"""The rules of one fileset URL, in the order their messages are given."""


def fileset_error(url: str) -> str | None:
    """What is wrong with a fileset URL (the message of the first rule it breaks), or None."""
    return next((r.message for r in FILESET_RULES if r.holds and not r.holds(url)), None)


Fileset = Annotated[str, Field(max_length=MAX_FILESET_LENGTH), Rules(*FILESET_RULES)]


# -- spec ------------------------------------------------------------------------------


class TensorBoardSpec(T9kModel):
    """A TensorBoard on training logs in PersistentVolumeClaims (also a job's tensorboardSpec)."""

    training_log_filesets: list[Fileset] = Field(
        min_length=1,
        max_length=MAX_FILESETS,
        description=(
            "Where the training logs (TensorBoard event files) are, as URLs of the form "
            "t9k://pvc/<claim>/<path>: a PersistentVolumeClaim of the namespace, mounted "
            "read-only, and a directory in it (none: the whole claim). No other form is "
            "served. Each fileset is one named run group, <claim>/<path> (TensorBoard's "
            "--logdir_spec); the subdirectories holding event files are its runs."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    image: str = Field(
        min_length=1,
        max_length=1024,
        description=(
            "Image of the TensorBoard; it must have the tensorboard command on its PATH "
            "(e.g. a tensorflow/tensorflow image). It runs `tensorboard --logdir_spec "
            "<runs> --host 0.0.0.0 --port 6006`."
        ),
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
    def _distinct(cls, filesets: list[str]) -> list[str]:
        if len(set(filesets)) != len(filesets):
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
    label, every pod name fits (``pod_name_length``), its TensorBoard's fits."""
    return (JOB_NAME_RULE, pod_name_length, TENSORBOARD_NAME_RULE)


# -- status ---------------------------------------------------------------------------

READY = "Ready"
"""The one condition type of a TensorBoard."""

PROGRESS_REASONS = frozenset({"Ready", "Creating", "Pending", "Starting", "Replacing"})
"""Reasons of the Ready condition that mean "on its way" (or there); any other
(Unschedulable, ImagePullBackOff, CrashLoopBackOff, FailedCreate, ...) means the
TensorBoard is in trouble: a Warning."""


class TensorBoardCondition(T9kModel):
    """Whether the TensorBoard serves, and why not."""

    type: Literal["Ready"] = Field(description="Type of the condition: Ready.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(
        default="",
        description=(
            "Ready; on its way: Creating, Pending, Starting, Replacing; in trouble: "
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
    """One fileset, as TensorBoard names it."""

    name: str = Field(description="The run group's name in TensorBoard: <claim>/<path>.")
    fileset: str = Field(description="The fileset it serves.")
    path: str = Field(description="Where the fileset is in the TensorBoard's container.")


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
        default=[], description="The run groups TensorBoard serves, one per fileset."
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
        "(mounted read-only), behind a Service; reach it with the kubectl port-forward "
        "command in status.portForward. A T9k job with spec.tensorboardSpec owns one of "
        "its name."
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
