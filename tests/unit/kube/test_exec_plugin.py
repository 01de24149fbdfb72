"""Exec credential plugins (``client.authentication.k8s.io/v1`` and
``v1beta1``) run by the operator's loader: a plugin script written by the
test prints an ExecCredential and records each time it runs and what it was
given."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kube import ApiError, load_connection
from t9k_operator.kube.exec_plugin import ExecError, ExecPlugin, parse

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


def plugin(folder: Path, status: dict[str, Any], api_version: str = V1, exit_code: int = 0) -> Path:
    """A plugin that appends its environment's KUBERNETES_EXEC_INFO, its
    arguments and GREETING to runs.jsonl, then prints the ExecCredential."""
    credential = json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})
    script = folder / "bin" / "plugin"
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f'printf \'{{"info": %s, "args": "%s", "greeting": "%s"}}\\n\' '
        f'"$KUBERNETES_EXEC_INFO" "$*" "$GREETING" >> {folder}/runs.jsonl\n'
        f"echo 'plugin says no' >&2\n"
        f"[ {exit_code} -eq 0 ] || exit {exit_code}\n"
        f"cat <<'EOF'\n{credential}\nEOF\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def runs(folder: Path) -> list[dict[str, Any]]:
    path = folder / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def kubeconfig(folder: Path, exec_config: dict[str, Any]) -> Path:
    path = folder / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "ctx",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": "https://api.example:6443", "tls-server-name": "api"},
                    }
                ],
                "users": [{"name": "u", "user": {"exec": exec_config}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_a_token_from_a_v1_plugin_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    plugin(tmp_path, {"token": "exec-token"})
    path = kubeconfig(
        tmp_path,
        {
            "apiVersion": V1,
            "command": "./bin/plugin",
            "args": ["get", "token"],
            "env": [{"name": "GREETING", "value": "hello"}],
            "interactiveMode": "Never",
            "provideClusterInfo": True,
        },
    )
    conn = load_connection(str(path))
    assert conn.authorization() == "Bearer exec-token"
    assert conn.authorization() == "Bearer exec-token"
    (run,) = runs(tmp_path)  # no expiry: run once, kept
    assert run["args"] == "get token"
    assert run["greeting"] == "hello"
    assert run["info"] == {
        "apiVersion": V1,
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {"server": "https://api.example:6443", "tls-server-name": "api"},
        },
    }


def test_a_client_certificate_from_a_v1beta1_plugin(tmp_path: Path) -> None:
    plugin(tmp_path, {"clientCertificateData": "CERT PEM", "clientKeyData": "KEY PEM"}, V1BETA1)
    path = kubeconfig(tmp_path, {"apiVersion": V1BETA1, "command": str(tmp_path / "bin/plugin")})
    conn = load_connection(str(path))
    assert conn.cert_file and conn.key_file
    assert Path(conn.cert_file).read_text() == "CERT PEM"
    assert Path(conn.key_file).read_text() == "KEY PEM"
    assert conn.authorization() is None
    (run,) = runs(tmp_path)
    assert run["info"] == {
        "apiVersion": V1BETA1,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_the_token_is_kept_until_it_expires_then_asked_again(tmp_path: Path) -> None:
    plugin(tmp_path, {"token": "t", "expirationTimestamp": "2030-01-01T00:00:00Z"})
    clock = [dt.datetime(2029, 12, 31, 23, 59, 0, tzinfo=dt.UTC)]
    exec_plugin = ExecPlugin(
        {"apiVersion": V1, "command": str(tmp_path / "bin/plugin")},
        str(tmp_path),
        now=lambda: clock[0],
    )
    assert exec_plugin.authorization() == "Bearer t"
    clock[0] = dt.datetime(2029, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
    assert exec_plugin.authorization() == "Bearer t"
    assert len(runs(tmp_path)) == 1
    clock[0] = dt.datetime(2030, 1, 1, 0, 0, 0, tzinfo=dt.UTC)
    assert exec_plugin.authorization() == "Bearer t"
    assert len(runs(tmp_path)) == 2


def test_a_failing_plugin_fails_the_load_with_what_it_said(tmp_path: Path) -> None:
    plugin(tmp_path, {"token": "t"}, exit_code=3)
    path = kubeconfig(tmp_path, {"apiVersion": V1, "command": str(tmp_path / "bin/plugin")})
    with pytest.raises(ApiError, match="exited 3: plugin says no"):
        load_connection(str(path))


def test_a_missing_command_names_the_install_hint(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path,
        {"apiVersion": V1, "command": "t9k-no-such-plugin", "installHint": "install it first"},
    )
    with pytest.raises(ApiError, match="no command 't9k-no-such-plugin': install it first"):
        load_connection(str(path))


def test_an_always_interactive_plugin_is_refused(tmp_path: Path) -> None:
    plugin(tmp_path, {"token": "t"})
    path = kubeconfig(
        tmp_path,
        {"apiVersion": V1, "command": str(tmp_path / "bin/plugin"), "interactiveMode": "Always"},
    )
    with pytest.raises(ApiError, match="interactiveMode is Always"):
        load_connection(str(path))
    assert runs(tmp_path) == []


def test_an_old_api_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExecError, match=r"v1alpha1.* is not one of"):
        ExecPlugin({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}, "/")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"kind": "Other"}', "not an ExecCredential"),
        (json.dumps({"kind": "ExecCredential", "apiVersion": V1BETA1}).encode(), "answered"),
        (
            json.dumps({"kind": "ExecCredential", "apiVersion": V1, "status": {}}).encode(),
            "neither",
        ),
        (
            json.dumps(
                {"kind": "ExecCredential", "apiVersion": V1, "status": {"clientKeyData": "k"}}
            ).encode(),
            "without its key, or a key alone",
        ),
        (
            json.dumps(
                {
                    "kind": "ExecCredential",
                    "apiVersion": V1,
                    "status": {"token": "t", "expirationTimestamp": "tomorrow"},
                }
            ).encode(),
            "not RFC 3339",
        ),
    ],
)
def test_what_a_plugin_may_not_print(output: bytes, message: str) -> None:
    with pytest.raises(ExecError, match=message):
        parse(output, V1)


def test_a_plugin_failing_later_fails_the_request_not_the_process(tmp_path: Path) -> None:
    script = plugin(tmp_path, {"token": "t", "expirationTimestamp": "2000-01-01T00:00:00Z"})
    path = kubeconfig(tmp_path, {"apiVersion": V1, "command": str(script)})
    conn = load_connection(str(path))  # expired at once: every request runs it again
    assert conn.authorization() == "Bearer t"
    os.unlink(script)
    with pytest.raises(ApiError, match="exec credential plugin: no command"):
        conn.authorization()
