"""What the operator's own loader leaves to the ``kubernetes`` package: a
user with an auth-provider is loaded by that package's loader; the operator's
start and a usual kubeconfig never import the package (it costs tens of MB of
resident memory); port-forwarding gets that package's configuration from a
connection the operator's loader made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from t9k_operator.kube import load_connection
from t9k_operator.kube.connection import Connection
from t9k_operator.kube.provider_config import configuration

# A JWT whose payload is {"exp":4102444800} (2100-01-01): not expired, so the
# OIDC provider uses it as it is.
ID_TOKEN = "eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDB9.c2ln"


def write(path: Path, user: dict[str, object]) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "ctx",
                "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.9:6443"}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_an_auth_provider_user_goes_to_the_kubernetes_loader(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        {"auth-provider": {"name": "oidc", "config": {"id-token": ID_TOKEN, "client-id": "x"}}},
    )
    conn = load_connection(str(path))
    assert conn.host == "https://10.0.0.9:6443"
    assert conn.authorization() == f"Bearer {ID_TOKEN}"
    assert conn.loaded is not None


CHILD = """
import json, sys
import t9k_operator.__main__
from t9k_operator.kube import KubeClient, load_connection
connection = load_connection(sys.argv[1])
KubeClient(connection).close()
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] == "kubernetes")))
"""


def test_the_operators_start_imports_no_kubernetes_package(tmp_path: Path) -> None:
    path = write(tmp_path / "config", {"token": "abc"})
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []


def test_port_forwarding_gets_a_configuration_from_our_connection() -> None:
    tokens = iter(["Bearer one", "Bearer two"])
    conn = Connection(
        host="https://10.0.0.9:6443",
        ca_file="/ca.crt",
        cert_file="/me.crt",
        key_file="/me.key",
        tls_server_name="api",
        authorization=lambda: next(tokens),
    )
    cfg = configuration(conn)
    assert (cfg.host, cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file) == (
        "https://10.0.0.9:6443",
        "/ca.crt",
        "/me.crt",
        "/me.key",
    )
    assert (cfg.verify_ssl, cfg.tls_server_name) == (True, "api")
    # Asked of the connection each time the package builds its headers.
    assert cfg.get_api_key_with_prefix("BearerToken", alias="authorization") == "Bearer two"
