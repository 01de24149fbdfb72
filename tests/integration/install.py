"""Helpers for the install tests: the real Helm and kustomize (built by
`make binaries` into the binary cache, ``python3 -m hack.cluster tool``), rendering,
and the API server's own word on what a ServiceAccount may do."""

from __future__ import annotations

import copy
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from t9k_operator.kube import KubeClient
from tests.integration.cluster import ROOT, cluster_script

CHART = ROOT / "charts" / "t9k-operator"
DEPLOY = ROOT / "deploy"
HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
)
HELM_ANNOTATIONS = ("helm.sh/resource-policy",)

# libyaml's safe loader where PyYAML has it: a rendering is 2.5 MB of CRDs.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Key = tuple[str, str, str]  # kind, namespace ("" when cluster-scoped), name


@dataclass(frozen=True)
class Tools:
    helm: Path
    kustomize: Path
    monitoring_crds: Path  # ServiceMonitor's and PrometheusRule's CRDs

    @classmethod
    def obtain(cls) -> Tools:
        """The tools' folders, never built here (``MissingBinaries``: run
        `make binaries`)."""
        proc = cluster_script("tool", "helm", "kustomize", "monitoring-crds")
        helm, kustomize, crds = proc.stdout.split()
        return cls(Path(helm) / "helm", Path(kustomize) / "kustomize", Path(crds) / "crds")

    def run(self, *args: str) -> str:
        proc = subprocess.run(
            [str(a) for a in args], capture_output=True, text=True, env=_no_kubeconfig()
        )
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(args[:3])} ... failed:\n{proc.stderr[-3000:]}")
        return proc.stdout

    def kustomize_build(
        self,
        overlay: Path,
        *,
        namespace: str | None = None,
        components: tuple[Path, ...] = (),
    ) -> str:
        """``kustomize build`` of ``overlay`` through an overlay of our own, as a
        user would write it (kustomize takes relative paths only)."""
        with tempfile.TemporaryDirectory(prefix="t9k-kustomize-") as tmp:
            doc: dict[str, Any] = {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(overlay, tmp)],
            }
            if namespace:
                doc["namespace"] = namespace
            if components:
                doc["components"] = [os.path.relpath(c, tmp) for c in components]
            (Path(tmp) / "kustomization.yaml").write_text(yaml.safe_dump(doc))
            return self.run(self.kustomize, "build", tmp)

    def helm_template(self, *args: str, namespace: str = "t9k-system") -> str:
        return self.run(self.helm, "template", "t9k", str(CHART), "--namespace", namespace, *args)


def _no_kubeconfig() -> dict[str, str]:
    """Rendering needs no cluster: keep the tools off any kubeconfig."""
    return {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}


def objects(text: str) -> dict[Key, dict[str, Any]]:
    """The documents of a YAML stream by (kind, namespace, name); a duplicate
    is an error."""
    out: dict[Key, dict[str, Any]] = {}
    for doc in yaml.load_all(text, Loader=LOADER):
        if not doc:
            continue
        meta = doc["metadata"]
        key = (doc["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in out, f"{key} twice"
        out[key] = doc
    return out


def without_helm(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without the labels and annotations only Helm's templates add."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    for field, keys in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
        values = meta.get(field) or {}
        for k in keys:
            values.pop(k, None)
        if field in meta and not values:
            del meta[field]
    return obj


def may(
    admin: KubeClient,
    user: str,
    verb: str,
    group: str,
    resource: str,
    namespace: str | None = None,
) -> bool:
    """Whether the API server's authorizer allows ``user`` (a SubjectAccessReview)."""
    plural, _, sub = resource.partition("/")
    attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": plural}
    if sub:
        attrs["subresource"] = sub
    if namespace:
        attrs["namespace"] = namespace
    review = admin.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": attrs},
        },
    )
    return bool(review["status"].get("allowed"))


def rule_grants(rules: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Every (verb, group, resource) a list of RBAC rules names."""
    return [
        (verb, group, res)
        for rule in rules
        for group in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    ]
