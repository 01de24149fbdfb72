"""The TensorBoard integration as the operator runs it: the job's side
(:class:`~t9k_operator.integrations.tensorboard.integration.JobTensorBoard`,
pure) and the TensorBoard's own controller, which does I/O and so is kept
out of the pure module."""

from __future__ import annotations

from t9k_operator.integrations.tensorboard.controller import TensorBoardReconciler
from t9k_operator.integrations.tensorboard.integration import JobTensorBoard
from t9k_operator.runtime.controller import Controller, ControllerContext


class ServedTensorBoard(JobTensorBoard):
    """A job's TensorBoard, and the controller of every TensorBoard."""

    def controllers(self, ctx: ControllerContext) -> list[Controller]:
        return [TensorBoardReconciler(ctx).controller]
