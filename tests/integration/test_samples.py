"""Every file in manifests/samples/ applies as written and runs to Succeeded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.cluster import ROOT, Cluster, wait_for
from tests.kinds import kubeflow_status

SAMPLES = sorted((ROOT / "manifests" / "samples").glob("*.yaml"))


@pytest.mark.usefixtures("operator")
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_sample_runs_to_success(cluster: Cluster, namespace: str, sample: Path) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(sample))
    doc = yaml.safe_load(sample.read_text())
    kind, name = doc["kind"].lower(), doc["metadata"]["name"]
    kubeflow = kubeflow_status(doc["kind"])  # MSJob's: Kubeflow-style conditions

    def finished() -> str | None:
        out = cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout
        status = yaml.safe_load(out).get("status") or {}
        if kubeflow:
            done = [c["type"] for c in status.get("conditions") or [] if c["status"] == "True"]
            return next((t for t in done if t in ("Succeeded", "Failed")), None)
        phase = status.get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    assert wait_for(finished, 90, f"{name} to finish") == "Succeeded"
