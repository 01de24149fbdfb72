"""The deliverer's metrics: ``t9k_notifications_total`` (by channel and
result: delivered, retried, gave_up) and ``t9k_notifications_queued`` (the
deliveries waiting in the endpoints' queues). Registered when the registry is
imported, so the families are there, empty, while notifications are off.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from t9k_operator.foundation.metrics import collector

DELIVERIES = collector(
    Counter,
    "t9k_notifications_total",
    "Notification tries by the endpoint's channel (webhook, slack, feishu, dingtalk, wecom, "
    "email) and result: delivered, retried (another try follows) or gave_up.",
    ["channel", "result"],
)
QUEUED = collector(
    Gauge,
    "t9k_notifications_queued",
    "Notification deliveries waiting in the endpoints' queues.",
)
