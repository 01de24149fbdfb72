"""A T9k job's TensorBoard (``spec.tensorboardSpec``), owned by the job.

Kept in every phase of the job (paused and finished too: it reads logs
already written and holds no GPU): created when missing, its spec kept equal
to the field (as the model reads both), deleted when the field goes. The
status says what became of it (a refusal, from the job's next pass):
``status.tensorboard`` (action, dependent, ready, reason, note, type), as
the T9k product shows it. A TensorBoard that cannot be had (the API server
refuses it, another object holds its name) is reported there and in a
Warning Event, and never fails the job or touches its phase.

The TensorBoard itself is served by its own controller
(``integrations/tensorboard/controller.py``); every TensorBoard is watched, and a
change to one reconciles the job of the same name.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from pydantic import ValidationError

from t9k_operator.api import tensorboard as api
from t9k_operator.api.tensorboard import TensorBoardSpec
from t9k_operator.integrations.tensorboard import build
from t9k_operator.integrations.tensorboard.status import (
    TensorBoardState,
    dependent_state,
)
from t9k_operator.kinds.asks import WithTensorBoard
from t9k_operator.kinds.command import resource_of
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    Event,
    JobInput,
    Refusal,
    Rule,
    Watch,
    clash,
)

TENSORBOARDS = resource_of(api.CRD)
"""Every TensorBoard: a job's own (``spec.tensorboardSpec``) and those users create."""
WHAT = "the job's TensorBoard"

# status.tensorboard's reasons (the T9k product's), and the Events about it
DEPENDENT_READY = "DependentReady"
DEPENDENT_CREATING = "DependentCreating"
DEPENDENT_NOT_READY = "DependentNotReady"
DEPENDENT_FAILED = "DependentFailed"
TENSORBOARD_READY = "TensorBoardReady"
TENSORBOARD_NOT_READY = "TensorBoardNotReady"


def same_spec(a: Any, b: Any) -> bool:
    """Whether two TensorBoard specs mean the same (as the model reads them)."""
    try:
        return TensorBoardSpec.model_validate(a) == TensorBoardSpec.model_validate(b)
    except ValidationError:
        return False


def wanted(job: Any, view: JobView) -> Obj | None:
    """The TensorBoard a parsed job asks for: the one its view's
    :class:`~t9k_operator.kinds.asks.WithTensorBoard` (``spec.tensorboardSpec``,
    the same field for every kind that has it) describes; None without the
    field, or for a kind without it."""
    asked = view.ask(WithTensorBoard)
    return None if asked is None else build.for_job(job, asked.spec)


@dataclass(frozen=True)
class JobTensorBoardState:
    """A job's TensorBoard: the one it asks for, as seen, and what is done to it."""

    tb: TensorBoardState | None = None  # None: the job asks for none
    want: Obj | None = None
    seen: Obj | None = None
    owned: tuple[Obj, ...] = ()  # what the job owns while it asks for none: deleted


class JobTensorBoard(Base[JobTensorBoardState]):
    """The job's TensorBoard integration (always on)."""

    name = "tensorboard"
    serves: ClassVar[tuple[type, ...]] = (WithTensorBoard,)

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> JobTensorBoard:
        return cls()

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        """A job's own TensorBoards, and every TensorBoard its controller serves."""
        group, plural = TENSORBOARDS.group, TENSORBOARDS.plural
        return (
            Rule(
                (group,),
                (plural,),
                ("get", "list", "watch", "create", "update", "delete"),
                why="TensorBoards: created, updated (to follow the job's tensorboardSpec) and\n"
                "deleted (when the field goes) as a T9k job's; watched, and served (their\n"
                "status written, their pod and Service owned) whoever created them. get:\n"
                "whose is one of the job's name. Their pod and Service are under the\n"
                "children's rules above (a pod, not a Deployment: docs/tensorboard.md).",
            ),
            Rule((group,), (f"{plural}/status", f"{plural}/finalizers"), ("update",)),
        )

    def watches(self) -> tuple[Watch, ...]:
        return (Watch(TENSORBOARDS, by_name=True),)

    def observe(self, job: JobInput, caches: Caches) -> tuple[JobTensorBoardState, JobView]:
        view = job.view
        want = wanted(job.job, view)
        if want is None:
            owned = caches.owned(TENSORBOARDS, view.uid)
            return JobTensorBoardState(owned=tuple(owned)), view
        name = want["metadata"]["name"]
        seen = caches.get(TENSORBOARDS, view.namespace, name)
        action, refused = "NOP", ""
        if seen is None:
            action = "Create"
        elif (controller_ref(seen) or {}).get("uid") != view.uid:
            refused = clash("TensorBoard", name, controller_ref(seen))
        elif not same_spec(seen.get("spec"), want["spec"]):
            action = "Update"
        tb = dependent_state(name, view.namespace, seen, action, refused)
        return JobTensorBoardState(tb, want, seen), view

    def prepare(self, state: JobTensorBoardState, view: JobView) -> list[Action]:
        if state.tb is None:
            return [
                Action("delete", TENSORBOARDS, owned, WHAT, soft=True)
                for owned in state.owned
                if not owned["metadata"].get("deletionTimestamp")
            ]
        if state.tb.failed or state.want is None:
            return []
        if state.tb.action == "Create":
            return [Action("create", TENSORBOARDS, state.want, WHAT, soft=True)]
        if state.tb.action == "Update" and state.seen is not None:
            updated = copy.deepcopy(state.seen)
            updated["spec"] = state.want["spec"]
            return [Action("replace", TENSORBOARDS, updated, WHAT, soft=True)]
        return []

    def refused(
        self, state: JobTensorBoardState, action: Action, refusal: Refusal
    ) -> JobTensorBoardState:
        if state.tb is None or refusal.conflict:
            return state  # changed meanwhile: the next pass looks again
        if refusal.clash:
            message = refusal.message
        else:
            then = "fix spec.tensorboardSpec" if refusal.permanent else "retrying"
            message = (
                f"the API server refused TensorBoard {state.tb.name} ({refusal.message}); {then}"
            )
        tb = dependent_state(
            state.tb.name, state.tb.namespace, state.seen, state.tb.action, message
        )
        return replace(state, tb=tb)

    def status(self, state: JobTensorBoardState, view: JobView, status: Obj) -> list[Event]:
        """``status.tensorboard``: the job's TensorBoard as last seen, in every phase;
        absent without one. Its trouble is told once in a Warning Event."""
        tb = state.tb
        if tb is None:
            return []
        part, events = render(tb, view.status.get("tensorboard") or {})
        status["tensorboard"] = part
        return events


def render(state: TensorBoardState, before: Mapping[str, Any]) -> tuple[Obj, list[Event]]:
    """``status.tensorboard`` for ``state``, and the Event its change calls for
    (``before``: the part as last written)."""
    dependent: Obj = {"apiVersion": api.API_VERSION, "kind": api.KIND, "name": state.name}
    dependent["namespace"] = state.namespace
    if state.uid:
        dependent["uid"] = state.uid
    label = f"TensorBoard [{state.name}]"
    exists_in_trouble = state.uid and not state.ready and state.reason not in api.PROGRESS_REASONS
    warning = state.failed or bool(exists_in_trouble)
    if state.failed:
        reason, note = DEPENDENT_FAILED, f"{label} cannot be had: {state.message}"
    elif not state.uid:
        reason, note = DEPENDENT_CREATING, f"{label} is being created"
    elif state.ready:
        reason, note = DEPENDENT_READY, f"{label} is ready"
    else:
        why = f"{state.reason}: {state.message}" if state.message else state.reason
        reason, note = DEPENDENT_NOT_READY, f"{label} is not ready: {why}"
    part: Obj = {
        "action": state.action,
        "dependent": dependent,
        "note": note,
        "ready": state.ready,
        "reason": reason,
        "type": "Warning" if warning else "Normal",
    }
    events: list[Event] = []
    if warning and (before.get("type") != "Warning" or before.get("reason") != reason):
        events.append(("Warning", TENSORBOARD_NOT_READY, note))
    elif state.ready and not before.get("ready"):
        events.append(("Normal", TENSORBOARD_READY, note))
    return part, events
