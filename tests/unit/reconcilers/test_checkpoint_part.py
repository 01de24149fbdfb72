"""status.checkpoint, the checkpoint integration's part: its model keeps what
the stop gate writes, the CRD generator merges it into every job kind's
status, and `t9k describe` shows it in its head after Restarts, after the
progress lines, as the registry orders their views."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator import registry
from t9k_operator.integrations.checkpoint.build import CHECKPOINT_PART
from t9k_operator.integrations.checkpoint.integration import Checkpoint
from t9k_operator.integrations.checkpoint.view import VIEW, checkpoint_fields
from t9k_operator.kinds.registry import KINDS

ROOT = Path(__file__).resolve().parents[3]
SAVED = {
    "lastStep": 420,
    "lastStepTime": "2026-03-01T12:00:05Z",
    "replica": "j-master-0",
    "requestedAt": "2026-03-01T12:00:00Z",
    "reason": "Paused",
    "stoppedAt": "2026-03-01T12:00:07Z",
    "waited": True,
}


def test_the_part_keeps_every_field_the_gate_writes() -> None:
    parsed = CHECKPOINT_PART.model.model_validate(SAVED)
    assert parsed.model_dump(by_alias=True, exclude_none=True) == SAVED


def test_the_integration_lists_its_part_and_the_registry_has_both() -> None:
    assert Checkpoint.parts == (CHECKPOINT_PART,)
    assert Checkpoint in registry.INTEGRATIONS and CHECKPOINT_PART in registry.PARTS


@pytest.mark.parametrize("plural", sorted(k.crd.plural for k in KINDS))
def test_every_job_kinds_crd_has_the_part(plural: str) -> None:
    (path,) = (ROOT / "manifests" / "crds").glob(f"*_{plural}.yaml")
    crd = yaml.safe_load(path.read_text())
    for version in crd["spec"]["versions"]:
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        saved = status["properties"]["checkpoint"]
        assert saved["description"] == CHECKPOINT_PART.description
        assert sorted(saved["properties"]) == sorted(SAVED)


def test_describe_shows_the_step_and_the_stop() -> None:
    job: dict[str, Any] = {"status": {"checkpoint": SAVED}}
    assert VIEW.fields(argparse.Namespace(), job, []) == [
        ("Checkpoint", "step 420, reported by j-master-0 at 2026-03-01T12:00:05Z"),
        (
            "",
            "stopped (Paused) at 2026-03-01T12:00:07Z, after every running replica had "
            "checkpointed",
        ),
    ]
    waiting = {"requestedAt": "2026-03-01T12:00:00Z", "reason": "NodeCordoned"}
    assert checkpoint_fields({"status": {"checkpoint": waiting}}) == [
        ("Checkpoint", "asked at 2026-03-01T12:00:00Z (NodeCordoned): waiting for the replicas")
    ]
    assert checkpoint_fields({"status": {}}) == []


def test_its_lines_follow_the_progress_lines_after_restarts() -> None:
    after_restarts = [type(v).__module__ for v in registry.views() if v.head_after == "Restarts"]
    assert after_restarts == [
        "t9k_operator.integrations.progress.view",
        "t9k_operator.integrations.checkpoint.view",
    ]
