"""``spec.logDir`` of a TensorBoard (and of a job's ``tensorboardSpec``): where its
training logs are, in the layout of T9k's 2025 manual.

Exactly one source kind per TensorBoard:

* ``pvc``: PersistentVolumeClaims of the namespace, each mounted read-only,
  and directories in them (``subPath``; none: the whole claim);
* ``s3``: S3 URIs (``s3://<bucket>/<prefix>``), read with the credentials of a
  Secret of the namespace (``secretRef``), handed to TensorBoard as
  environment variables taken from the Secret by reference;
* ``http``: URLs of event files, fetched into the pod and followed as they grow.

Each invariant is a :class:`~t9k_operator.api.rules.Rule`: the API server
checks its CEL at admission, the model its Python side, with one message.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule, Rules

MAX_SOURCES = 32
MAX_PATH_LENGTH = 1024
MAX_NAME_LENGTH = 253
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = f"^{_LABEL}([.]{_LABEL})*$"
"""A PersistentVolumeClaim's or a Secret's name."""
S3_URI = "^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$"
"""An S3 URI: ``s3://``, a bucket name, and a key prefix."""
HTTP_URL = "^https?://[^/?#]+/.+$"
"""An http(s) URL of one file."""
_PARENT = "(^|/)[.][.](/|$)"

MSG_ONE_SOURCE = (
    "logDir takes exactly one source kind: pvc, s3 or http (a TensorBoard reads its "
    "logs from one kind of place)"
)
MSG_COMMA = (
    "a log location must not contain a comma: TensorBoard's --logdir_spec separates "
    "locations with commas"
)
MSG_NEWLINE = "a log location must be one line"
MSG_PARENT = "a subPath must not contain a '..' segment: it stays inside its claim"
MSG_S3_URI = (
    "an S3 location must be s3://<bucket>/<prefix>: a bucket name (lower-case letters, "
    "digits, '.' and '-', 3 to 63 characters) and the key prefix of the event files"
)
MSG_HTTP_URL = "an HTTP location must be the http:// or https:// URL of one event file"
MSG_NAME = "a claim's or a Secret's name must be a lower-case DNS name"


def _rule(cel: str, message: str, pattern: str, *, absent: bool = False) -> Rule[str]:
    """A rule that a location matches ``pattern`` (``absent``: does not contain it)."""
    if absent:
        return Rule(cel, message, lambda s: re.search(pattern, s) is None)
    # As RE2 (the API server's) does, ``.`` stops at a newline.
    return Rule(cel, message, lambda s: re.fullmatch(pattern.strip("^$"), s) is not None)


COMMA_RULE = _rule("!self.contains(',')", MSG_COMMA, ",", absent=True)
NEWLINE_RULE = _rule("!self.contains('\\n')", MSG_NEWLINE, "\n", absent=True)
PARENT_RULE = _rule(f"!self.matches('{_PARENT}')", MSG_PARENT, _PARENT, absent=True)
NAME_RULE = _rule(f"self.matches('{DNS_SUBDOMAIN}')", MSG_NAME, DNS_SUBDOMAIN)
S3_URI_RULE = _rule(f"self.matches('{S3_URI}')", MSG_S3_URI, S3_URI)
HTTP_URL_RULE = _rule(f"self.matches('{HTTP_URL}')", MSG_HTTP_URL, HTTP_URL)

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH), Rules(NAME_RULE)]
SubPath = Annotated[
    str, Field(max_length=MAX_PATH_LENGTH), Rules(NEWLINE_RULE, COMMA_RULE, PARENT_RULE)
]
S3Uri = Annotated[str, Field(max_length=MAX_PATH_LENGTH), Rules(S3_URI_RULE, COMMA_RULE)]
HttpUrl = Annotated[str, Field(max_length=MAX_PATH_LENGTH), Rules(HTTP_URL_RULE, COMMA_RULE)]


class PVCDataSource(T9kModel):
    """A PersistentVolumeClaim of the namespace, and directories in it."""

    name: Name = Field(description="The claim's name; it is mounted read-only.")
    sub_path: list[SubPath] = Field(
        default_factory=list,
        max_length=MAX_SOURCES,
        description=(
            "Directories in the claim holding event files (each, with its subdirectories, "
            "a run group <claim>/<subPath>). None: the whole claim."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class SecretRef(T9kModel):
    """A Secret of the namespace."""

    name: Name = Field(description="The Secret's name.")


class S3DataSource(T9kModel):
    """Event files in S3 (or an S3-compatible store)."""

    secret_ref: SecretRef = Field(
        description=(
            "A Secret of the namespace with the store's credentials and address: keys "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and optionally S3_ENDPOINT (the "
            "store's URL, e.g. http://minio.storage:9000; unset: AWS) and AWS_REGION. "
            "TensorBoard's container gets them as environment variables by reference."
        )
    )
    uri: list[S3Uri] = Field(
        min_length=1,
        max_length=MAX_SOURCES,
        description=(
            "S3 URIs, s3://<bucket>/<prefix> (e.g. s3://bucket/train/logs/): every event "
            "file whose key starts with the prefix is read; each URI is a run group "
            "<bucket>/<prefix>."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class HttpDataSource(T9kModel):
    """Event files served over HTTP."""

    url: list[HttpUrl] = Field(
        min_length=1,
        max_length=MAX_SOURCES,
        description=(
            "URLs of event files. The pod fetches each one into its own directory and "
            "fetches what was appended every 30 seconds (HTTP Range), so a growing file is "
            "followed; each URL is a run group named after it."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


ONE_SOURCE_RULE: Rule[TensorBoardDataSource] = Rule(
    "(has(self.pvc) ? 1 : 0) + (has(self.s3) ? 1 : 0) + (has(self.http) ? 1 : 0) == 1",
    MSG_ONE_SOURCE,
    lambda d: sum(x is not None for x in (d.pvc, d.s3, d.http)) == 1,
)


class TensorBoardDataSource(T9kModel):
    """Where the training logs are: exactly one of pvc, s3 and http."""

    rules = (ONE_SOURCE_RULE,)

    pvc: list[PVCDataSource] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SOURCES,
        description="PersistentVolumeClaims of the namespace and directories in them.",
    )
    s3: S3DataSource | None = Field(
        default=None, description="S3 URIs and the Secret with the store's credentials."
    )
    http: HttpDataSource | None = Field(default=None, description="URLs of event files.")


class T9kQueue(T9kModel):
    """The T9k scheduler's settings of a TensorBoard."""

    queue: str = Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description=(
            "A queue of the T9k scheduler. Kept as written; the operator places a "
            "TensorBoard's pod with the default scheduler and says so in the Ready "
            "condition's message."
        ),
    )


class SchedulePolicy(T9kModel):
    """The scheduler the TensorBoard asks for (T9k's manual has its queue)."""

    t9k_scheduler: T9kQueue | None = Field(
        default=None,
        alias="t9kScheduler",  # to_camel would spell it t9KScheduler
        description="The T9k scheduler's settings (its queue).",
    )
