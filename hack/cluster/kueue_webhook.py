"""Kueue's webhook server in the cluster (the add-on ``KUEUE``): its
certificates, and its CRDs' conversion webhook registered with the API
server, as Kueue's release manifests register it.

Since v0.16 Kueue stores its objects as ``v1beta2`` and serves ``v1beta1``
beside it only through the conversion webhook its manager serves
(``/convert``). Its release manifests register that webhook in the CRDs
(``spec.conversion``) and its certificate management (cert-controller's
rotator) injects its CA into them; v0.17.0's manager does not start until it
could (``cert.BootstrapCerts`` in pkg/util/cert/cert.go). Here the webhook is
registered by URL instead of Service (the API server and the manager share
this machine), and the Secret the rotator reads holds a CA and certificate it
keeps (``_webhook_certs``): it injects that CA, and the manager serves that
certificate. Kueue's admission webhooks stay unregistered."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from .pki import _openssl
from .processes import kubectl

KUEUE_NAMESPACE = "kueue-system"
KUEUE_CERT_SECRET = "kueue-webhook-server-cert"  # Kueue's default name for it
WEBHOOK_SERVICE = "kueue-webhook-service"  # Kueue's default; its certificate's DNS name
CA_NAME = "kueue-ca"  # the rotator's name (and DNS name) for its CA
# The CRDs the rotator injects its CA into, for their conversion webhook
# (pkg/util/cert/cert.go in v0.17.0): the kinds whose v1beta1 and v1beta2
# differ in more than the version.
CONVERTED_CRDS = ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")


def _webhook_certs(pki: Path) -> None:
    """A CA of Kueue's own (``kueue-ca.crt``) and, signed by it, its webhook
    server's certificate (``kueue-webhook.crt``), in ``pki``, made once.

    The rotator keeps the CA and certificate it finds in its Secret when they
    are valid, as it checks them: the CA for the DNS name ``kueue-ca`` (its
    key in PKCS #1, which openssl 3 no longer writes by default), the
    server's for ``kueue-webhook-service.kueue-system.svc``, each beyond 90
    days from now. The server's also names 127.0.0.1, where the API server
    calls it. (A cluster's state from before Kueue v0.17 has a webhook
    certificate of the cluster's CA and no ``kueue-ca.crt``: both are made
    anew.)"""
    if (pki / "kueue-ca.crt").exists() and (pki / "kueue-webhook.crt").exists():
        return
    ca = "req -x509 -newkey rsa:2048 -nodes -keyout kueue-ca.key -out kueue-ca.crt -days 3650"
    _openssl(
        *ca.split(),
        *("-subj", f"/O=kueue/CN={CA_NAME}", "-addext", f"subjectAltName=DNS:{CA_NAME}"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment"),
        cwd=pki,
    )
    _openssl(*["rsa", "-in", "kueue-ca.key", "-traditional", "-out", "kueue-ca.key"], cwd=pki)
    dns = f"{WEBHOOK_SERVICE}.{KUEUE_NAMESPACE}.svc"
    csr = "req -newkey rsa:2048 -nodes -keyout kueue-webhook.key -out kueue-webhook.csr"
    _openssl(*csr.split(), "-subj", f"/CN={dns}", cwd=pki)
    (pki / "kueue-webhook.ext").write_text(
        f"subjectAltName=DNS:{dns},IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    )
    sign = (
        "x509 -req -in kueue-webhook.csr -CA kueue-ca.crt -CAkey kueue-ca.key -CAcreateserial "
        "-out kueue-webhook.crt -days 3650 -extfile kueue-webhook.ext"
    )
    _openssl(*sign.split(), cwd=pki)


def _conversion(bin_dir: Path, kubeconfig: Path, pki: Path, port: int) -> None:
    """Kueue's certificates in its Secret, and its CRDs' conversion webhook
    registered: the manager's webhook server on 127.0.0.1:``port``."""
    _webhook_certs(pki)

    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    files = {"ca.crt": "kueue-ca.crt", "ca.key": "kueue-ca.key"}
    files |= {"tls.crt": "kueue-webhook.crt", "tls.key": "kueue-webhook.key"}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": KUEUE_CERT_SECRET, "namespace": KUEUE_NAMESPACE},
        "data": {key: b64(name) for key, name in files.items()},
    }
    apply = ("apply", "--server-side", "--force-conflicts", "-f", "-")
    kubectl(bin_dir, kubeconfig, *apply, input_=json.dumps(secret))
    client = {"url": f"https://127.0.0.1:{port}/convert", "caBundle": b64("kueue-ca.crt")}
    webhook = {"conversionReviewVersions": ["v1"], "clientConfig": client}
    patch = json.dumps({"spec": {"conversion": {"strategy": "Webhook", "webhook": webhook}}})
    for plural in CONVERTED_CRDS:
        crd = f"customresourcedefinition/{plural}.kueue.x-k8s.io"
        kubectl(bin_dir, kubeconfig, "patch", crd, "--type=merge", "-p", patch)
