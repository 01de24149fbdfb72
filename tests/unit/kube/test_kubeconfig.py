"""Kubeconfig files read by the operator's own loader: which context, cluster
and user are chosen from one file or several, and the connection each kind of
user gives (certificates, a token, a token file that rotates, a user name and
password), every expected value written out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kube import ApiError, load_connection
from t9k_operator.kube.kubeconfig import KubeconfigError, select

# base64 of b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
CA_DATA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
CA_PEM = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
# base64 of b"client-cert" and b"client-key"
CERT_DATA, KEY_DATA = "Y2xpZW50LWNlcnQ=", "Y2xpZW50LWtleQ=="


def kubeconfig(
    path: Path,
    user: dict[str, Any],
    cluster: dict[str, Any] | None = None,
    current: str | None = "ctx",
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://10.1.2.3:6443/"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_current_context_and_relative_paths_from_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    path = kubeconfig(
        folder / "config",
        {"client-certificate": "certs/me.crt", "client-key": "/abs/me.key"},
        {"server": "https://api:6443", "certificate-authority": "ca.crt"},
    )
    chosen = select(str(path))
    assert chosen.context == "ctx"
    assert chosen.cluster.path("certificate-authority") == str(folder / "ca.crt")
    assert chosen.user.path("client-certificate") == str(folder / "certs/me.crt")
    assert chosen.user.path("client-key") == "/abs/me.key"


def test_several_files_merge_first_definition_and_current_context_win(tmp_path: Path) -> None:
    first = tmp_path / "a"
    first.write_text(
        yaml.safe_dump(
            {
                "current-context": "dev",
                "clusters": [{"name": "shared", "cluster": {"server": "https://first"}}],
                "contexts": [{"name": "dev", "context": {"cluster": "shared", "user": "alice"}}],
            }
        )
    )
    second = tmp_path / "b"
    second.write_text(
        yaml.safe_dump(
            {
                "current-context": "prod",
                "clusters": [
                    {"name": "shared", "cluster": {"server": "https://second"}},
                    {"name": "other", "cluster": {"server": "https://other"}},
                ],
                "users": [{"name": "alice", "user": {"token": "t-alice"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "other", "user": "alice"}}],
            }
        )
    )
    paths = f"{first}:{tmp_path / 'missing'}:{second}"
    dev = load_connection(paths)
    assert (dev.host, dev.authorization()) == ("https://first", "Bearer t-alice")
    prod = load_connection(paths, context="prod")
    assert prod.host == "https://other"


def test_a_context_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"token": "x"})
    with pytest.raises(KubeconfigError, match="no context 'nope'"):
        select(str(path), "nope")
    with pytest.raises(ApiError, match=r"cannot load Kubernetes configuration: .*no context"):
        load_connection(str(path), "nope")
    none = kubeconfig(tmp_path / "none", {"token": "x"}, current=None)
    with pytest.raises(ApiError, match="no current context"):
        load_connection(str(none))


def test_certificate_data_is_written_to_files_only_the_user_reads(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        {"client-certificate-data": CERT_DATA, "client-key-data": KEY_DATA},
        {"server": "https://10.1.2.3:6443/", "certificate-authority-data": CA_DATA},
    )
    conn = load_connection(str(path))
    assert conn.host == "https://10.1.2.3:6443"
    assert conn.verify is True
    assert conn.ca_file and conn.cert_file and conn.key_file
    assert Path(conn.ca_file).read_bytes() == CA_PEM
    assert Path(conn.cert_file).read_bytes() == b"client-cert"
    assert Path(conn.key_file).read_bytes() == b"client-key"
    assert Path(conn.key_file).stat().st_mode & 0o777 == 0o600
    assert conn.authorization() is None


def test_skip_verify_and_the_tls_server_name(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        {"token": "abc"},
        {
            "server": "https://1.2.3.4",
            "insecure-skip-tls-verify": True,
            "certificate-authority-data": CA_DATA,
            "tls-server-name": "kubernetes.default",
        },
    )
    conn = load_connection(str(path))
    assert (conn.verify, conn.ca_file, conn.tls_server_name) == (False, None, "kubernetes.default")
    assert conn.authorization() == "Bearer abc"


def test_a_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("first\n")
    path = kubeconfig(tmp_path / "config", {"tokenFile": "token"})
    conn = load_connection(str(path))
    assert conn.authorization() == "Bearer first"
    (tmp_path / "token.new").write_text("second-and-longer\n")
    (tmp_path / "token.new").rename(tmp_path / "token")
    assert conn.authorization() == "Bearer second-and-longer"


def test_a_missing_token_file_fails_when_loaded(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"tokenFile": "absent"})
    with pytest.raises(ApiError, match=r"cannot read tokenFile .*absent"):
        load_connection(str(path))


def test_user_name_and_password(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"username": "user", "password": "pass"})
    assert load_connection(str(path)).authorization() == "Basic dXNlcjpwYXNz"


def test_bad_certificate_data_is_an_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"client-certificate-data": "not base64!"})
    with pytest.raises(ApiError, match="client-certificate-data is not base64"):
        load_connection(str(path))


def test_no_kubeconfig_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ApiError, match="no kubeconfig file at"):
        load_connection(str(tmp_path / "absent"))
