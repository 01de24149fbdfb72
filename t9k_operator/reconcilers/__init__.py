"""Reconcilers: the shared job engine and one thin module per job kind.

:func:`build_controllers` is what the manager calls to get one
:class:`~t9k_operator.controller.Controller` per job kind, wired to the
informers it needs. Job kinds are registered here as they are implemented.
"""

from __future__ import annotations

from t9k_operator.controller import Controller, ControllerContext


def build_controllers(ctx: ControllerContext) -> list[Controller]:
    """One controller per job kind; none are registered yet."""
    return []
