"""What the README tells a newcomer to run works as written, and `make demo`
leaves nothing behind."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from t9k_operator.kinds.registry import KINDS
from tests.integration.cluster import ROOT, Cluster


def readme_kubectl_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "manifests/samples" in b)
    return [
        line.split("#")[0].strip()
        for line in block.splitlines()
        if line.strip().startswith("kubectl ")
    ]


def test_the_readme_first_commands_work(
    cluster: Cluster, crds_installed: None, namespace: str
) -> None:
    lines = readme_kubectl_lines()
    assert any("--watch" in line for line in lines)
    for line in lines:
        argv = [
            str(cluster.bin_dir / "kubectl"),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "-n",
            namespace,
            *shlex.split(line)[1:],
        ]
        proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            _, err = proc.communicate(timeout=4)
        except subprocess.TimeoutExpired:
            assert "--watch" in line, f"{line!r} did not finish"
            proc.kill()
            _, err = proc.communicate()
            assert err == "", f"{line!r}: {err}"
            continue
        assert proc.returncode == 0, f"{line!r} failed: {err}"


def test_demo_removes_its_temporary_folder_and_cluster(tmp_path: Path, cluster: Cluster) -> None:
    name = f"demo-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "TMPDIR": str(tmp_path), "T9K_NO_BUILD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "hack.demo", "--name", name, "--once"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "every sample job has finished" in proc.stdout
    # Every kind's sample shows in the demo's table (`kubectl get t9k`), MSJob's too.
    for kind in (k.crd.singular for k in KINDS):
        assert f"{kind}." in proc.stdout, f"no {kind} in the demo:\n{proc.stdout[-3000:]}"
    assert list(tmp_path.glob("t9k-demo-*")) == []  # its kubeconfig held a token
    status = subprocess.run(
        [sys.executable, "-m", "hack.cluster", "status", "--name", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert status.returncode == 1 and "not running" in status.stdout


pytestmark = pytest.mark.timeout(300)
