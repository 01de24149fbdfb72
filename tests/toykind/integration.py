"""The toy integration: with ``--toy-seen``, every ToyJob's status gets
``status.toy: {seen: true}``, written by this integration alone.

A test integration that lives only in the tests and is registered by an
entry point alone (see tests/toy_plugin.py): its own module plus one
registry line. It has its own flag, states the ClusterRole rules it needs
(``rbac``, which hack/gen_rbac.py writes) and adds its part to the status.
"""

from __future__ import annotations

import argparse

from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.integrations.contract import Base, Caches, Event, JobInput, Rule
from tests.toykind.api import CRD

SEEN: Obj = {"seen": True}
"""The integration's status part, ``status.toy``."""


class ToySeen(Base[bool]):
    """Marks every ToyJob it sees; other kinds are none of its business."""

    name = "toy-seen"

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
        status["toy"] = dict(SEEN)
        return []
