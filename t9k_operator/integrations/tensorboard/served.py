"""The TensorBoard integration as the operator runs it: the job's side
(:class:`~t9k_operator.integrations.tensorboard.integration.JobTensorBoard`,
pure) and the TensorBoard's own controller, which does I/O and so is kept
out of the pure module.

Its servers' modules are imported when the operator builds them, not with
the registry: ``t9k``, which reads the registry for the integrations' status
parts, never loads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_operator.integrations.tensorboard.integration import JobTensorBoard

if TYPE_CHECKING:
    from t9k_operator.runtime.controller import Controller, ControllerContext


class ServedTensorBoard(JobTensorBoard):
    """A job's TensorBoard, and the controller of every TensorBoard."""

    def controllers(self, ctx: ControllerContext, peers: Sequence[object]) -> list[Controller]:
        from t9k_operator.integrations.tensorboard.controller import TensorBoardReconciler
        from t9k_operator.reconcilers.pipeline.queued_pods import queuer

        return [TensorBoardReconciler(ctx, queuer(peers)).controller]
