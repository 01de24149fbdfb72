"""The in-cluster connection from a service account folder the test writes:
the server from the pod's environment, the CA file, and the token read again
when kubelet rotates it (a new ``..data`` folder swapped in under a symlink)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from t9k_operator.kube import incluster


def service_account(root: Path, token: str, version: str) -> Path:
    """kubelet's layout: token and ca.crt are symlinks through ``..data``."""
    data = root / version
    data.mkdir()
    (data / "token").write_text(token)
    (data / "ca.crt").write_text("CA")
    link = root / "..data.tmp"
    link.symlink_to(version)
    link.rename(root / "..data")
    for name in ("token", "ca.crt"):
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")
    return root


@pytest.fixture
def pod_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")


@pytest.mark.usefixtures("pod_env")
def test_the_server_ca_and_a_rotated_token(tmp_path: Path) -> None:
    folder = service_account(tmp_path, "token-one", "v1")
    assert incluster.available(str(folder))
    conn = incluster.load(str(folder))
    assert conn.host == "https://10.96.0.1:443"
    assert conn.ca_file == str(folder / "ca.crt")
    assert conn.verify is True
    assert conn.authorization() == "Bearer token-one"
    service_account(tmp_path, "token-two", "v2")
    assert os.readlink(folder / "..data") == "v2"
    assert conn.authorization() == "Bearer token-two"


def test_an_ipv6_service_address_is_bracketed() -> None:
    assert incluster.server_url("fd00:10:96::1", "443") == "https://[fd00:10:96::1]:443"
    assert incluster.server_url("10.96.0.1", "6443") == "https://10.96.0.1:6443"


def test_outside_a_pod_it_is_not_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    service_account(tmp_path, "t", "v1")
    assert not incluster.available(str(tmp_path))
    with pytest.raises(incluster.InClusterError, match="KUBERNETES_SERVICE_HOST"):
        incluster.load(str(tmp_path))


@pytest.mark.usefixtures("pod_env")
def test_an_empty_token_or_no_ca_is_an_error(tmp_path: Path) -> None:
    folder = service_account(tmp_path, "", "v1")
    with pytest.raises(incluster.InClusterError, match="token is empty"):
        incluster.load(str(folder))
    (folder / "ca.crt").unlink()
    with pytest.raises(incluster.InClusterError, match="no service account CA"):
        incluster.load(str(folder))
