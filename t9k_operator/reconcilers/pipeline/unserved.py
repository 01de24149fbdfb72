"""The fields of a job whose requests no integration that is on serves.

A kind states what a job asks beyond its pods as requests
(:mod:`~t9k_operator.kinds.asks`), each naming the field it comes from; an
integration lists the requests it acts on (``serves``). A request that none
of the integrations the operator runs with serves (one turned off by its
flags, or whose folder is not installed) would otherwise be stored and never
acted on: the job is told, once, when it is accepted, with the same Warning
(``FieldNotActedOn``) as the fields its kind does not act on.

Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from t9k_operator.kinds.asks import asked_by
from t9k_operator.kinds.view import JobView
from t9k_operator.reconcilers.pipeline.contract import Event, Integration

NOT_ACTED_ON = "FieldNotActedOn"


def not_served(integrations: Sequence[Integration[Any]], view: JobView) -> tuple[str, ...]:
    """The fields of ``view``'s requests that none of ``integrations`` serves, in
    the order the kind states them (a request the user did not make is left out)."""
    served = {t for integration in integrations for t in integration.serves}
    return tuple(
        field
        for of, ask in view.asks.items()
        if of not in served and (field := asked_by(ask)) is not None
    )


def told(fields: Sequence[str]) -> list[Event]:
    """The Warning for ``fields``, none when there are none."""
    if not fields:
        return []
    message = (
        f"{', '.join(fields)}: stored as written, but no part of this operator that is on "
        "acts on it (turned off by the operator's flags, or not installed): the job runs as "
        "if it were not set"
    )
    return [("Warning", NOT_ACTED_ON, message)]
