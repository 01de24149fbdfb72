"""The job engine: one pure state machine (restart, backoff, deadline, pause,
resume, debug, cleanup, conditions) that every job kind goes through.

May import the kinds' vocabulary (``t9k_operator.kinds``), ``builders``, ``api``
and ``objects``; never an integration, the apply step or any runtime plumbing.
"""

from t9k_operator.reconcilers.engine.conditions import (
    TERMINAL,
    Reason,
    fmt_time,
    get_condition,
    parse_time,
    set_condition,
)
from t9k_operator.reconcilers.engine.rules import (
    CREATE_BATCH,
    DEFAULT_DISRUPTION_LIMIT,
    DEFAULT_START_TIMEOUT,
    Plan,
    Pods,
    Rules,
    plan,
)

__all__ = [
    "CREATE_BATCH",
    "DEFAULT_DISRUPTION_LIMIT",
    "DEFAULT_START_TIMEOUT",
    "TERMINAL",
    "Plan",
    "Pods",
    "Reason",
    "Rules",
    "fmt_time",
    "get_condition",
    "parse_time",
    "plan",
    "set_condition",
]
