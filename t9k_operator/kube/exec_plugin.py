"""Credentials from a kubeconfig's exec plugin (``users[].user.exec``), as
``client.authentication.k8s.io/v1`` and ``v1beta1`` define them: the command
runs with the config's arguments and environment and
``KUBERNETES_EXEC_INFO``, and prints an ``ExecCredential`` whose status holds
a token, or a client certificate and key, and when they expire. The token is
kept until then and the command run again after."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from t9k_operator.kube.tokens import bearer

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
TIMEOUT = 60.0
"""Seconds a plugin may take."""


class ExecError(Exception):
    """The plugin could not be run, failed, or printed no usable credential."""


@dataclass(frozen=True)
class Credential:
    token: str | None
    client_certificate: str | None
    client_key: str | None
    expires: dt.datetime | None


def _parse_time(text: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ExecError(f"expirationTimestamp {text!r} is not RFC 3339") from exc


def parse(output: bytes, api_version: str) -> Credential:
    """The credential in a plugin's standard output."""
    try:
        doc = json.loads(output)
    except ValueError as exc:
        raise ExecError("its output is not JSON") from exc
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise ExecError("its output is not an ExecCredential")
    if doc.get("apiVersion") != api_version:
        raise ExecError(f"it answered {doc.get('apiVersion')!r}, asked {api_version!r}")
    status = doc.get("status") or {}
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    if bool(cert) != bool(key):
        raise ExecError("it gave a client certificate without its key, or a key alone")
    if not token and not cert:
        raise ExecError("its ExecCredential has neither a token nor a client certificate")
    stamp = status.get("expirationTimestamp")
    return Credential(token, cert, key, _parse_time(stamp) if stamp else None)


class ExecPlugin:
    """One user's exec plugin: :meth:`credential` runs it when nothing valid is kept."""

    def __init__(
        self,
        config: dict[str, Any],
        folder: str,
        cluster: dict[str, Any] | None = None,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.api_version = str(config.get("apiVersion") or "")
        if self.api_version not in API_VERSIONS:
            raise ExecError(
                f"exec apiVersion {self.api_version!r} is not one of {', '.join(API_VERSIONS)}"
            )
        command = str(config.get("command") or "")
        if not command:
            raise ExecError("exec names no command")
        # A command with a folder in it is relative to the kubeconfig's file;
        # a bare name is looked up on PATH.
        if os.sep in command and not os.path.isabs(command):
            command = os.path.join(folder, command)
        self.argv = [command, *(str(a) for a in config.get("args") or [])]
        self.env = {str(e["name"]): str(e["value"]) for e in config.get("env") or []}
        self.interactive = config.get("interactiveMode") == "Always"
        self.cluster = cluster if config.get("provideClusterInfo") else None
        self.hint = str(config.get("installHint") or "")
        self._now = now
        self._lock = threading.Lock()
        self._kept: Credential | None = None

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = {
                k: v
                for k, v in (
                    ("server", self.cluster.get("server")),
                    ("tls-server-name", self.cluster.get("tls-server-name")),
                    ("insecure-skip-tls-verify", self.cluster.get("insecure-skip-tls-verify")),
                    ("certificate-authority-data", self.cluster.get("certificate-authority-data")),
                )
                if v
            }
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    def _run(self) -> Credential:
        if self.interactive:
            raise ExecError("the plugin's interactiveMode is Always, and no terminal is here")
        if shutil.which(self.argv[0]) is None:
            hint = f": {self.hint}" if self.hint else ""
            raise ExecError(f"no command {self.argv[0]!r}{hint}")
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self._exec_info()}
        try:
            done = subprocess.run(
                self.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ExecError(f"{self.argv[0]}: {exc}") from exc
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[:300]
            told = f": {said}" if said else ""
            raise ExecError(f"{self.argv[0]} exited {done.returncode}{told}")
        return parse(done.stdout, self.api_version)

    def credential(self) -> Credential:
        """The kept credential while it is valid, else a new one from the plugin."""
        with self._lock:
            kept = self._kept
            if kept is None or (kept.expires is not None and self._now() >= kept.expires):
                kept = self._kept = self._run()
            return kept

    def authorization(self) -> str | None:
        token = self.credential().token
        return bearer(token) if token else None
