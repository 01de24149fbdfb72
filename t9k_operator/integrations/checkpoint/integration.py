"""Checkpoint before a stop (docs/checkpoint.md): a job whose spec asks for it
(``spec.runPolicy.checkpoint``, which the kinds state as
:class:`~t9k_operator.kinds.asks.CheckpointOnStop`) has its replicas asked
to checkpoint before the operator stops them for a reason that is not the
job's own, and new pods resume from the newest checkpoint. Always on, it
gives the engine a stop gate for each pass of every job
(:meth:`Checkpoint.stop_gate`:
:class:`~t9k_operator.integrations.checkpoint.stops.CheckpointStop`), which
holds such a stop until the running replicas have reported their checkpoints
(the job's view's ``checkpoints``, which the progress integration hears) or
the grace has passed, asks before a drain it sees coming, and writes
``status.checkpoint`` (:data:`~.build.CHECKPOINT_PART`).

The replicas learn of a request from the progress endpoint's answers, which
ask them to checkpoint while the cached job's ``status.checkpoint`` holds one.

Pure.
"""

from __future__ import annotations

import argparse
from typing import ClassVar

from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.checkpoint.build import CHECKPOINT_PART
from t9k_operator.integrations.checkpoint.stops import CheckpointStop
from t9k_operator.kinds.asks import CheckpointOnStop
from t9k_operator.kinds.view import JobView
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, JobInput, Rule


class Checkpoint(Base[None]):
    """The checkpoint integration (always on: every job's passes get its stop
    gate, which lets every stop of a job that does not ask go at once)."""

    name = "checkpoint"
    serves: ClassVar[tuple[type, ...]] = (CheckpointOnStop,)
    parts: ClassVar[tuple[StatusPart, ...]] = (CHECKPOINT_PART,)

    @staticmethod
    def from_flags(args: argparse.Namespace) -> Checkpoint:
        return Checkpoint()

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return ()  # it writes the job's status only, through the engine's plan

    def observe(self, job: JobInput, caches: Caches) -> tuple[None, JobView]:
        return None, job.view

    def stop_gate(self, state: None, view: JobView) -> CheckpointStop:
        return CheckpointStop()
