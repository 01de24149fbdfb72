"""The board's rows with thousands of jobs: pages opened together share one
computation, and a row that did not change stays the object kept."""

from __future__ import annotations

import copy
from datetime import timedelta

from t9k_operator.console.board import JobBoard
from tests.unit.cli import fixtures as f


def test_rows_are_computed_once_for_pages_opened_together() -> None:
    now = [f.NOW]
    board = JobBoard(now=lambda: now[0])
    board.put_job(f.MNIST)
    first = board.rows()
    assert board.rows() is first
    # A change, or time passing, computes them afresh.
    finished = copy.deepcopy(f.MNIST)
    finished["status"]["phase"] = "Succeeded"
    board.put_job(finished)
    second = board.rows()
    assert second is not first and second[0].cells[3] == "Succeeded"
    now[0] = f.NOW + timedelta(hours=1)
    third = board.rows()
    assert third is not second
    # A row equal to the one kept is that one (its duration read the same).
    now[0] = f.NOW + timedelta(hours=1, seconds=2)
    fourth = board.rows()
    assert fourth is not third and fourth[0] is third[0]
