"""Install the operator with kustomize into the current kubeconfig's cluster
(``make deploy IMG=...``), or remove it (``make undeploy``).

``apply`` builds an overlay of manifests/ (default
``deploy/cluster-wide``) with the operator's image set to
``--image``, in a temporary kustomization beside nothing of the work tree
(the tracked files stay as they are), and applies it server-side: the CRDs
are too large for client-side apply's annotation.

``delete`` deletes the same objects except the CRDs and the PriorityClasses:
deleting a CRD deletes every job of its kind and, by their owner references,
the jobs' pods. Only objects labelled ``app.kubernetes.io/name=t9k-operator``
go (the namespace, ServiceAccount, RBAC, Deployment, Service and, with the
monitoring component, ServiceMonitor and PrometheusRule).

kustomize is the one hack/cluster builds (``make binaries``); kubectl is
``--kubectl``, else the one on PATH, else the local cluster's.

``install`` and ``uninstall`` (``make install``/``make uninstall``, as
kubebuilder's projects name them) apply or delete the CRDs alone
(manifests/crds): to run the operator outside the cluster (``make run``).
Deleting a CRD deletes every object of its kind, so every job and its pods.

Usage::

    python3 -m hack.release.deploy apply --image ghcr.io/me/t9k-operator:dev [--overlay DIR]
    python3 -m hack.release.deploy delete [--overlay DIR]
    python3 -m hack.release.deploy install | uninstall

(from the repository root).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hack import cluster  # the tools' cache

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "ghcr.io/t9k-operator/t9k-operator"  # the name in manifests/manager/deployment.yaml
OPERATOR_LABEL = "app.kubernetes.io/name=t9k-operator"
FIELD_MANAGER = "t9k-operator-deploy"


def image_entry(image: str) -> dict[str, str]:
    """kustomize's ``images`` entry setting the operator's image to ``image``
    (``name[:tag]`` or ``name@digest``; a registry port is not a tag)."""
    entry = {"name": IMAGE}
    if "@" in image:
        name, _, digest = image.partition("@")
        return entry | {"newName": name, "digest": digest}
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return entry | {"newName": image, "newTag": "latest"}
    return entry | {"newName": name, "newTag": tag}


def build(overlay: Path, image: str | None) -> str:
    """The overlay's objects, with the image set, as kustomize builds them."""
    kustomize = cluster.ensure_addon_binaries(cluster.TOOLS["kustomize"]) / "kustomize"
    with tempfile.TemporaryDirectory(prefix="t9k-deploy-") as tmp:
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            # kustomize takes relative paths only.
            "resources": [os.path.relpath(overlay.resolve(), tmp)],
        }
        if image:
            kustomization["images"] = [image_entry(image)]  # type: ignore[list-item]
        (Path(tmp) / "kustomization.yaml").write_text(json.dumps(kustomization))
        proc = subprocess.run(
            [str(kustomize), "build", tmp], capture_output=True, text=True, check=False
        )
    if proc.returncode != 0:
        raise SystemExit(f"deploy: kustomize build {overlay} failed:\n{proc.stderr}")
    return proc.stdout


def kubectl_path(given: str | None) -> str:
    if given:
        return given
    return shutil.which("kubectl") or str(cluster.ensure_binaries() / "kubectl")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["apply", "delete", "install", "uninstall"])
    parser.add_argument("--image", help="apply: the operator's image (IMG)")
    parser.add_argument("--overlay", type=Path, default=ROOT / "deploy" / "cluster-wide")
    parser.add_argument("--kubectl", help="kubectl to run (default: on PATH, else the cluster's)")
    args = parser.parse_args(argv)
    if args.command == "apply" and not args.image:
        parser.error("apply needs --image (make deploy IMG=...)")
    if args.command in ("install", "uninstall"):
        try:
            kubectl = kubectl_path(args.kubectl)
        except cluster.MissingBinaries as exc:
            print(exc, file=sys.stderr)
            return cluster.EXIT_MISSING_BINARIES
        crds = str(ROOT / "manifests" / "crds")
        if args.command == "install":
            cmd = [
                kubectl,
                "apply",
                "--server-side",
                f"--field-manager={FIELD_MANAGER}",
                "-f",
                crds,
            ]
        else:
            cmd = [kubectl, "delete", "--ignore-not-found", "-f", crds]
        return subprocess.run(cmd, env=os.environ, check=False).returncode
    try:
        objects = build(args.overlay, args.image)
        kubectl = kubectl_path(args.kubectl)
    except cluster.MissingBinaries as exc:
        print(exc, file=sys.stderr)
        return cluster.EXIT_MISSING_BINARIES
    if args.command == "apply":
        # --force-conflicts: these are the operator's own objects, and this is
        # how they are meant to be; fields an earlier install (install.yaml,
        # another manager) set are taken over rather than refused.
        cmd = [
            kubectl,
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={FIELD_MANAGER}",
            "-f",
            "-",
        ]
    else:
        # Never the CRDs (and so never the jobs and their pods): only the
        # operator's own objects.
        cmd = [kubectl, "delete", "--ignore-not-found", "-l", OPERATOR_LABEL, "-f", "-"]
    return subprocess.run(cmd, input=objects, text=True, env=os.environ, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
