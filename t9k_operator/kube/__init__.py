"""The only package that talks to the Kubernetes API (and imports ``kubernetes``,
only when called: for an auth-provider kubeconfig and for port-forwarding).
May import ``foundation``, ``resources`` and ``objects``; never informers, runtime or job kinds.

Public surface: :class:`KubeClient` (raw-JSON verbs, watches, pace,
timeouts), :class:`Resource` descriptors, and the error hierarchy in
:mod:`t9k_operator.kube.errors`. The client's verbs live in ``client``, the
connection and request machinery under them in ``transport``, its pace (the
client-side limit, or the API server's, and the retries of 429s) in ``pace``,
watch and log streams in ``streams``; the connection settings in ``config``
(kubeconfig and in-cluster loaders of its own, ``connection`` what they give).
"""

from t9k_operator.kube.client import KubeClient
from t9k_operator.kube.config import Connection, load_connection
from t9k_operator.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from t9k_operator.kube.portforward import PodPort, open_pod_port
from t9k_operator.kube.streams import LogStream, WatchStream
from t9k_operator.kube.transport import ClientOptions
from t9k_operator.objects import Obj
from t9k_operator.resources import Resource

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "ClientOptions",
    "Conflict",
    "Connection",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "LogStream",
    "NotFound",
    "Obj",
    "PodPort",
    "Resource",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WatchStream",
    "load_connection",
    "open_pod_port",
]
