"""The cluster's PKI: its CA, each component's client certificate, the API
server's serving certificate and the service-account key pair (``openssl``),
and the kubeconfigs naming them."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

FRONT_PROXY = "front-proxy-client"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path) -> None:
    pki.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=t9k-local-ca",
        cwd=pki,
    )
    sans = (
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local"
    )
    certs = {
        "apiserver": ("/CN=kube-apiserver", sans),
        "admin": ("/O=system:masters/CN=kubernetes-admin", None),
        "controller-manager": ("/CN=system:kube-controller-manager", None),
        "scheduler": ("/CN=system:kube-scheduler", None),
        "kwok": ("/O=system:masters/CN=kwok-controller", None),
        "pod-logs": ("/O=system:masters/CN=kwok-pod-logs", None),
        # The API server's client certificate towards aggregated API servers
        # (Kueue's visibility API), whose name they accept request headers from.
        "front-proxy-client": (f"/CN={FRONT_PROXY}", None),
    }
    for name, (subject, ext) in certs.items():
        issue_cert(pki, name, subject, ext)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def issue_cert(pki: Path, name: str, subject: str, ext: str | None = None) -> None:
    """``<name>.crt`` and ``.key`` in ``pki``, signed by the cluster's CA."""
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        "-subj",
        subject,
        cwd=pki,
    )
    extra = []
    if ext:
        (pki / f"{name}.ext").write_text(ext + "\n")
        extra = ["-extfile", f"{name}.ext"]
    _openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        f"{name}.crt",
        "-days",
        "3650",
        *extra,
        cwd=pki,
    )


def write_kubeconfig(path: Path, server: str, pki: Path, user: str) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "t9k-local",
                "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(f"{user}.crt"),
                    "client-key-data": b64(f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "t9k-local", "context": {"cluster": "t9k-local", "user": user}}],
        "current-context": "t9k-local",
    }
    # JSON is YAML: kubectl and every client read it.
    path.write_text(json.dumps(doc, indent=2) + "\n")
    path.chmod(0o600)
