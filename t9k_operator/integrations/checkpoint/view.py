"""What ``t9k describe`` shows of ``status.checkpoint``, in its head after
Restarts: the newest step checkpointed, and the stop that asked for one
(waiting, or made and whether it waited).

Pure: the job as listed.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.api.parts import CommandView
from t9k_operator.integrations.checkpoint.stops import KEY

Obj = Mapping[str, Any]


def checkpoint_lines(saved: Obj) -> list[str]:
    """The lines of ``status.checkpoint``; empty for a job without it."""
    lines = []
    if saved.get("lastStep") is not None:
        lines.append(
            f"step {saved['lastStep']}, reported by {saved.get('replica') or '<unknown>'} "
            f"at {saved.get('lastStepTime') or '<unknown>'}"
        )
    why = saved.get("reason") or "<unknown>"
    if saved.get("stoppedAt"):
        outcome = (
            "after every running replica had checkpointed"
            if saved.get("waited")
            else "when graceSeconds ran out, before every replica had checkpointed"
        )
        lines.append(f"stopped ({why}) at {saved['stoppedAt']}, {outcome}")
    elif saved.get("requestedAt"):
        lines.append(f"asked at {saved['requestedAt']} ({why}): waiting for the replicas")
    return lines


def checkpoint_fields(job: Obj) -> list[tuple[str, str]]:
    """The describe head's Checkpoint lines, labelled on the first."""
    saved = (job.get("status") or {}).get(KEY) or {}
    return [
        ("Checkpoint" if n == 0 else "", line) for n, line in enumerate(checkpoint_lines(saved))
    ]


class CheckpointView(CommandView):
    """Checkpoint in ``t9k describe``."""

    head_after = "Restarts"

    def fields(
        self, args: argparse.Namespace, job: Obj, pods: Sequence[Obj]
    ) -> list[tuple[str, str]]:
        return checkpoint_fields(job)


VIEW = CheckpointView()
