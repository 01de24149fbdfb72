"""A :class:`Connection` from a kubeconfig's selected cluster and user.

The cluster: ``server``, ``certificate-authority`` or
``certificate-authority-data``, ``insecure-skip-tls-verify``,
``tls-server-name``. The user: ``client-certificate(-data)`` and
``client-key(-data)``, ``token`` or ``tokenFile`` (read again when it
changes), ``username`` and ``password``, and an exec plugin
(:mod:`t9k_operator.kube.exec_plugin`). A user with an ``auth-provider`` is
not read here (:class:`Unsupported`): the caller hands it to the
``kubernetes`` package's loader.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from t9k_operator.kube import datafiles
from t9k_operator.kube.connection import Connection
from t9k_operator.kube.errors import ApiError
from t9k_operator.kube.exec_plugin import ExecError, ExecPlugin
from t9k_operator.kube.kubeconfig import Entry, KubeconfigError, Selected
from t9k_operator.kube.tokens import FileToken, basic, bearer


class Unsupported(Exception):
    """The user authenticates in a way this module does not read."""


def _pem_file(entry: Entry, key: str, suffix: str) -> str | None:
    """``key``'s file, or its ``-data`` written to one (base64 as kubeconfig has it)."""
    data = entry.fields.get(f"{key}-data")
    if data:
        try:
            raw = base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeconfigError(f"{key}-data is not base64") from exc
        return datafiles.write(raw, suffix)
    return entry.path(key)


def _exec_authorization(plugin: ExecPlugin) -> Callable[[], str | None]:
    def authorization() -> str | None:
        try:
            return plugin.authorization()
        except ExecError as exc:
            raise ApiError(f"exec credential plugin: {exc}") from exc

    return authorization


def _static(value: str | None) -> Callable[[], str | None]:
    return lambda: value


def connect(selected: Selected) -> Connection:
    cluster, user = selected.cluster, selected.user
    if user.fields.get("auth-provider"):
        raise Unsupported("auth-provider")
    server = str(cluster.fields.get("server") or "").rstrip("/")
    if not server:
        raise KubeconfigError(f"the cluster of context {selected.context!r} has no server")
    connection = Connection(
        host=server,
        verify=not cluster.fields.get("insecure-skip-tls-verify"),
        tls_server_name=cluster.fields.get("tls-server-name") or None,
    )
    if connection.verify:
        connection.ca_file = _pem_file(cluster, "certificate-authority", ".crt")
    connection.cert_file = _pem_file(user, "client-certificate", ".crt")
    connection.key_file = _pem_file(user, "client-key", ".key")
    fields = user.fields
    if fields.get("token"):
        connection.authorization = _static(bearer(str(fields["token"])))
    elif fields.get("tokenFile"):
        path = user.path("tokenFile")
        assert path is not None
        try:
            connection.authorization = FileToken(path).authorization
        except OSError as exc:
            raise KubeconfigError(f"cannot read tokenFile {path}: {exc.strerror}") from exc
    elif fields.get("exec"):
        _with_exec(connection, fields["exec"], user.folder, cluster)
    elif fields.get("username"):
        auth = basic(str(fields["username"]), str(fields.get("password") or ""))
        connection.authorization = _static(auth)
    return connection


def _with_exec(connection: Connection, config: dict[str, Any], folder: str, cluster: Entry) -> None:
    """The plugin runs once now: a client certificate it gives is the
    connection's (TLS reads it once), a token is asked of it per request."""
    try:
        plugin = ExecPlugin(config, folder, cluster.fields)
        first = plugin.credential()
    except ExecError as exc:
        raise KubeconfigError(f"exec credential plugin: {exc}") from exc
    if first.client_certificate and first.client_key and not connection.cert_file:
        connection.cert_file = datafiles.write(first.client_certificate.encode(), ".crt")
        connection.key_file = datafiles.write(first.client_key.encode(), ".key")
    if first.token:
        connection.authorization = _exec_authorization(plugin)
