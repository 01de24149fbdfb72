"""Every integration the operator has, listed once, in the order a reconcile
asks them (an integration may leave the job's view changed for those after
it: Kueue takes the job's queue before gang scheduling reads it).

Each entry is an integration's :class:`~.pipeline.contract.Setup`: the
pure integration's class, or (for one with servers of its own) its subclass
with the server hook (``reconcilers/serving.py``), which is why this registry
lives beside the pure package rather than in it. The operator's flags, the
check that the cluster serves what the enabled ones need, the informers they
read, the servers started, the RBAC rules hack/generate/rbac.py writes and the
tests' list of integrations all derive from :data:`INTEGRATIONS`. To add one,
see docs/adding-an-integration.md; one of another distribution is listed
after the built-ins by its entry point (:mod:`t9k_operator.entry_points`).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
from typing import Any

from t9k_operator import entry_points
from t9k_operator.api.parts import CommandView, StatusPart
from t9k_operator.integrations.checkpoint.integration import Checkpoint
from t9k_operator.integrations.gang.served import ServedGangScheduling
from t9k_operator.integrations.gpu_usage.served import ServedGPUUsage
from t9k_operator.integrations.kueue.served import ServedKueue
from t9k_operator.integrations.notifications.served import ServedNotifications
from t9k_operator.integrations.progress.served import ServedProgress
from t9k_operator.integrations.start_estimate.served import ServedStartEstimate
from t9k_operator.integrations.tensorboard.served import ServedTensorBoard
from t9k_operator.integrations.workdir.integration import Workdir
from t9k_operator.reconcilers.pipeline.contract import Integration, Rule, Setup

INTEGRATIONS: tuple[type[Setup], ...] = (
    ServedKueue,
    ServedGangScheduling,
    ServedTensorBoard,
    ServedProgress,
    Checkpoint,
    ServedGPUUsage,
    Workdir,
    ServedStartEstimate,
    ServedNotifications,
)
PARTS: tuple[StatusPart, ...] = tuple(part for setup in INTEGRATIONS for part in setup.parts)
"""Every built-in integration's part of a job's status, in registry order: the CRD
generator merges each part's schema into every job kind's status, ``t9k
describe`` shows each under its section, and the integration that owns a part
writes its field."""
# Then the parts of other distributions: each entry point of the group
# t9k_operator.status_parts names a StatusPart.
PARTS += entry_points.plugins(
    entry_points.STATUS_PARTS, PARTS, make=lambda part: part, names=lambda part: (part.key,)
)
# Then the integrations of other distributions: each entry point of the group
# t9k_operator.integrations names a Setup (docs/adding-an-integration.md).
INTEGRATIONS += entry_points.plugins(
    entry_points.INTEGRATIONS,
    INTEGRATIONS,
    make=lambda setup: setup,
    names=lambda setup: (setup.name,),
)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Every integration's flags."""
    for setup in INTEGRATIONS:
        setup.add_flags(parser)


def check_flags(args: argparse.Namespace) -> str | None:
    """The first problem with the integrations' flags, or None."""
    for setup in INTEGRATIONS:
        problem = setup.check_flags(args)
        if problem:
            return problem
    return None


def configure(args: argparse.Namespace) -> tuple[Integration[Any], ...]:
    """The integrations the flags turn on, in registry order."""
    return tuple(i for setup in INTEGRATIONS if (i := setup.from_flags(args)) is not None)


def rbac() -> dict[str, tuple[Rule, ...]]:
    """The RBAC rules of every integration, by its name, in registry order."""
    return {setup.name: setup.rbac() for setup in INTEGRATIONS}


@functools.cache
def views() -> tuple[CommandView, ...]:
    """Every integration's part of ``t9k``'s commands, in registry order: the
    ``VIEW`` of the ``view`` module in its folder (the package of its
    class's module), for each that has one. Loaded on the first call, so the
    operator, which never calls this, never loads what they import."""
    out = []
    for setup in INTEGRATIONS:
        package = setup.__module__.rpartition(".")[0]
        name = f"{package}.view"
        if package and importlib.util.find_spec(name) is not None:
            out.append(importlib.import_module(name).VIEW)
    return tuple(out)
