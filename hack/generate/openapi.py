"""Keep the pinned API server's own OpenAPI for the pod types in the repo.

The CRDs validate every pod template (and the ColossalAI launcher's container
fields) against the Kubernetes schema of the version we pin. That schema comes
from one place: ``GET /openapi/v3/api/v1`` of the pinned kube-apiserver
(``hack/versions.env``), the document ``kubectl explain`` reads for pods. The
definitions reachable from :data:`ROOTS` are written to :data:`OUT`, sorted,
so the generated CRDs can be rebuilt offline and a version bump shows up as a
reviewable diff.

* ``refresh`` (``make manifests``): start a throwaway local cluster with the
  pinned binaries, fetch the document, write :data:`OUT`, stop the cluster.
* ``check --kubeconfig K``: exit 1 when the kept file differs from what the
  API server behind ``K`` serves (the integration suite runs this against its
  own cluster, so a stale file fails CI).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hack import cluster  # the pinned binaries and local clusters

OUT = Path(__file__).resolve().parents[1] / "third_party" / "openapi" / "core-v1.json"
"""The kept subset of the pinned API server's ``/openapi/v3/api/v1``."""
PATH = "/openapi/v3/api/v1"
PREFIX = "#/components/schemas/"
ROOTS = (
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.core.v1.EnvVar",
    "io.k8s.api.core.v1.ResourceRequirements",
)
"""The definitions the CRDs embed; everything they reference comes along."""

Schema = dict[str, Any]


def reachable(schemas: dict[str, Schema], roots: tuple[str, ...] = ROOTS) -> dict[str, Schema]:
    """The definitions ``roots`` reference, directly or not (``roots`` included)."""
    seen: dict[str, Schema] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in schemas:
            raise KeyError(f"{PATH} has no definition {name!r}")
        seen[name] = schemas[name]
        todo.extend(_refs(schemas[name]))
    return dict(sorted(seen.items()))


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = []
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(PREFIX):
                out.append(value[len(PREFIX) :])
            else:
                out.extend(_refs(value))
        return out
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def document(served: dict[str, Any], version: str) -> dict[str, Any]:
    """The kept file's content, from the served ``/openapi/v3/api/v1``."""
    return {
        "source": f"kube-apiserver {version} GET {PATH}",
        "kubernetesVersion": version,
        "schemas": reachable(served["components"]["schemas"]),
    }


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load() -> dict[str, Any]:
    """The kept document (``schemas`` by definition name)."""
    return json.loads(OUT.read_text())


def fetch(kubeconfig: Path, bin_dir: Path) -> dict[str, Any]:
    raw = cluster.kubectl(bin_dir, kubeconfig, "get", "--raw", PATH).stdout
    return json.loads(raw)


def refresh() -> int:
    version = cluster.versions()["KUBERNETES_VERSION"]
    name = "t9k-openapi"
    kubeconfig = cluster.up(name)
    try:
        served = fetch(kubeconfig, cluster.ensure_binaries())
    finally:
        cluster.down(name, quiet=True)
    text = render(document(served, version))
    if OUT.exists() and OUT.read_text() == text:
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


def check(kubeconfig: Path) -> int:
    version = cluster.versions()["KUBERNETES_VERSION"]
    served = fetch(kubeconfig, cluster.ensure_binaries())
    if OUT.exists() and OUT.read_text() == render(document(served, version)):
        return 0
    print(f"{OUT} differs from what the API server serves; run `make manifests`", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("command", choices=["refresh", "check"])
    parser.add_argument("--kubeconfig", type=Path, help="for check: the API server to ask")
    args = parser.parse_args(argv)
    if args.command == "refresh":
        return refresh()
    if args.kubeconfig is None:
        parser.error("check needs --kubeconfig")
    try:
        return check(args.kubeconfig)
    except subprocess.CalledProcessError as exc:
        print(f"cannot read {PATH}: {exc.stderr.strip()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
