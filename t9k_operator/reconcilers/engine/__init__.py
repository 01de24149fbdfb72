"""The job engine: one pure state machine (restart, backoff, deadline, pause,
resume, debug, cleanup, conditions) that every job kind goes through.

May import the kinds' vocabulary (``t9k_operator.kinds``), ``builders``, ``api``
and ``objects``; never the reconcile pipeline (its contract, plan or apply
step), an integration or any runtime plumbing.
"""

from t9k_operator.kinds.contract import DEFAULT_START_TIMEOUT
from t9k_operator.objects import parse_time
from t9k_operator.reconcilers.engine.conditions import (
    TERMINAL,
    Reason,
    fmt_time,
    get_condition,
    set_condition,
)
from t9k_operator.reconcilers.engine.creation import CREATE_BATCH
from t9k_operator.reconcilers.engine.planner import plan
from t9k_operator.reconcilers.engine.planning import Plan, Pods, Rules, StopGate
from t9k_operator.reconcilers.engine.restarts import DEFAULT_DISRUPTION_LIMIT

__all__ = [
    "CREATE_BATCH",
    "DEFAULT_DISRUPTION_LIMIT",
    "DEFAULT_START_TIMEOUT",
    "TERMINAL",
    "Plan",
    "Pods",
    "Reason",
    "Rules",
    "StopGate",
    "fmt_time",
    "get_condition",
    "parse_time",
    "plan",
    "set_condition",
]
