"""The shipped manifests apply to a real API server (server-side apply)."""

from __future__ import annotations

import json

from tests.integration.cluster import ROOT, Cluster, wait_for


def test_rbac_and_manager_manifests_apply_server_side(cluster: Cluster) -> None:
    out = cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=t9k-test",
        "-f",
        str(ROOT / "manifests" / "rbac"),
        "-f",
        str(ROOT / "manifests" / "manager"),
    )
    assert "deployment.apps/t9k-operator serverside-applied" in out.stdout
    try:
        dep = json.loads(
            cluster.kubectl(
                "get", "deployment", "t9k-operator", "-n", "t9k-system", "-o", "json"
            ).stdout
        )
        spec = dep["spec"]["template"]["spec"]
        container = spec["containers"][0]
        assert dep["spec"]["replicas"] == 2
        assert "--leader-elect" in container["args"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        # Admitted under the namespace's restricted Pod Security level: the
        # ReplicaSet creates both pods without a policy violation.
        wait_for(
            lambda: (
                json.loads(
                    cluster.kubectl(
                        "get", "deployment", "t9k-operator", "-n", "t9k-system", "-o", "json"
                    ).stdout
                )
                .get("status", {})
                .get("replicas")
                == 2
            ),
            30,
            "the Deployment's pods",
        )
        # Applying again is a no-op, not a conflict.
        cluster.kubectl(
            "apply",
            "--server-side",
            "--field-manager=t9k-test",
            "-f",
            str(ROOT / "manifests" / "manager"),
        )
    finally:
        cluster.kubectl("delete", "-f", str(ROOT / "manifests" / "manager"), "--wait=false")
