"""The Python SDK of the t9k command: jobs of every kind, from Python.

May import ``kube`` (its only way to the API server), ``kinds`` (the one
descriptor of each kind the operator reads too: its names, resource, model,
replicas and GPUs), ``api`` (the CRDs' pydantic models), ``builders.common``
(the labels the operator puts on pods), ``resources`` and ``objects``;
never the operator's runtime, informers or reconcilers, and never
``kubernetes``. What an integration adds (the GPU usage from Prometheus, a
job's start estimate) is in its folder under ``t9k_operator/integrations``.
The CLI (``t9k_operator.cli``) is built on it. docs/sdk.md has a runnable example.
"""

from t9k_operator.kinds.command import Served as Kind
from t9k_operator.kinds.registry import KINDS, TENSORBOARD
from t9k_operator.sdk.build import JobRequest, build_job
from t9k_operator.sdk.client import Client, LogLine
from t9k_operator.sdk.errors import (
    AlreadyExists,
    ApiRefused,
    BadJob,
    Conflict,
    ConnectionFailed,
    Forbidden,
    Invalid,
    JobFailed,
    NotFound,
    T9kError,
    Unauthorized,
    Unsupported,
    WaitTimeout,
)

__all__ = [
    "KINDS",
    "TENSORBOARD",
    "AlreadyExists",
    "ApiRefused",
    "BadJob",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "Invalid",
    "JobFailed",
    "JobRequest",
    "Kind",
    "LogLine",
    "NotFound",
    "T9kError",
    "Unauthorized",
    "Unsupported",
    "WaitTimeout",
    "build_job",
]
