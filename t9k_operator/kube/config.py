"""Connection settings: kubeconfig or in-cluster service account.

A kubeconfig is read by :mod:`~t9k_operator.kube.kubeconfig` (the files,
merged, and the context's cluster and user) and
:mod:`~t9k_operator.kube.from_kubeconfig` (certificates, tokens, token files,
exec plugins); a pod's service account by
:mod:`~t9k_operator.kube.incluster`. Only a user with an ``auth-provider`` goes
to the ``kubernetes`` package's loader (:mod:`~t9k_operator.kube.provider_config`),
so the operator does not load that package otherwise.
"""

from __future__ import annotations

import os

from t9k_operator.kube import incluster, provider_config
from t9k_operator.kube.connection import Connection
from t9k_operator.kube.errors import ApiError
from t9k_operator.kube.exec_plugin import ExecError
from t9k_operator.kube.from_kubeconfig import Unsupported, connect
from t9k_operator.kube.kubeconfig import KubeconfigError, select

__all__ = ["Connection", "in_cluster_available", "load_connection"]


def in_cluster_available() -> bool:
    return incluster.available()


def _from_kubeconfig(paths: str, context: str | None) -> Connection:
    selected = select(paths, context)
    try:
        return connect(selected)
    except Unsupported:
        return provider_config.load(paths, selected.context)


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """Kubeconfig when one is named or found (``$KUBECONFIG``, ``~/.kube/config``),
    else the in-cluster service account."""
    explicit = kubeconfig or os.environ.get("KUBECONFIG")
    default_path = os.path.expanduser("~/.kube/config")
    try:
        if explicit or (not incluster.available() and os.path.exists(default_path)):
            return _from_kubeconfig(explicit or default_path, context)
        if incluster.available():
            return incluster.load()
    except (KubeconfigError, ExecError, incluster.InClusterError) as exc:
        raise ApiError(f"cannot load Kubernetes configuration: {exc}") from exc
    except ApiError:
        raise
    except Exception as exc:  # the kubernetes package's loader raises assorted types
        raise ApiError(f"cannot load Kubernetes configuration: {exc}") from exc
    raise ApiError(
        "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, "
        "or run in a pod with a service account"
    )
