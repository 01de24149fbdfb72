"""The toy integration: with ``--toy-seen``, every ToyJob's status gets
``status.toy: {seen: true}``, written by this integration alone.

A test integration that lives only in the tests and is registered by an
entry point alone (see tests/toy_plugin.py): its own module plus one
registry line. It has its own flag, states the ClusterRole rules it needs
(``rbac``, which hack/generate/rbac.py writes) and adds its part to the status.
"""

from __future__ import annotations

import argparse
from typing import ClassVar

from pydantic import BaseModel, Field

from t9k_operator.api.parts import StatusPart
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, Event, JobInput, Rule
from tests.toykind.api import CRD

SEEN: Obj = {"seen": True}
"""What the integration writes in its status part, ``status.toy``."""


class ToyStatus(BaseModel):
    """The toy integration's part of a job's status."""

    seen: bool = Field(description="Whether the toy integration saw the job.")


PART = StatusPart(
    key="toy",
    model=ToyStatus,
    description="What the toy integration saw of the job (with --toy-seen).",
    section="Toy",
    lines=lambda part: [f"seen by the toy integration: {'yes' if part.get('seen') else 'no'}"],
)
"""Its part of the status: registered by its own entry point (group
``t9k_operator.status_parts``), so the CRD generator and ``t9k describe`` know it."""


class ToySeen(Base[bool]):
    """Marks every ToyJob it sees; other kinds are none of its business."""

    name = "toy-seen"
    parts: ClassVar[tuple[StatusPart, ...]] = (PART,)

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--toy-seen", action="store_true", help="mark every ToyJob's status (status.toy)"
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        return None

    @staticmethod
    def from_flags(args: argparse.Namespace) -> ToySeen | None:
        return ToySeen() if args.toy_seen else None

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        """The ClusterRole rules it needs: read a ToyJob by name."""
        return (
            Rule((CRD.group,), (CRD.plural,), ("get",), why="The toy integration reads ToyJobs."),
        )

    def observe(self, job: JobInput, caches: Caches) -> tuple[bool, JobView] | None:
        return (True, job.view) if job.kind.crd.kind == CRD.kind else None

    def status(self, state: bool, view: JobView, status: Obj) -> list[Event]:
        status[PART.key] = dict(SEEN)
        return []
