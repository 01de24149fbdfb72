"""The API client's figures: requests sent to the API server (by answer,
method and host), the informers' share of them, the waits for the client's
own rate limiter and the limit in force, and the requests sent again after
the API server refused them (429)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from t9k_operator.foundation.metrics import collector

API_REQUESTS = collector(
    Counter,
    "rest_client_requests_total",
    "Requests this process sent to the API server, by the answer's HTTP status code "
    "('<error>' when none came), method and host (controller-runtime's name).",
    ["code", "method", "host"],
)
INFORMER_REQUESTS = collector(
    Counter,
    "t9k_informer_requests_total",
    "Requests the informers sent to the API server, by resource and verb: each page of a "
    "list and each start of a watch. Relists and re-watches show here; the rest of "
    "rest_client_requests_total's GETs are the reconciles' own reads.",
    ["resource", "verb"],
)
API_LIMITER_WAIT = collector(
    Histogram,
    "t9k_client_rate_limiter_wait_seconds",
    "Seconds a request waited for its client's own rate limiter before it was sent, by "
    "client (its user agent: the reconcile budget, Events, leader election) and method.",
    ["client", "method"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0),
)
API_QPS_LIMIT = collector(
    Gauge,
    "t9k_client_rate_limit_qps",
    "Requests per second the client's own rate limiter lets through, by client (its user "
    "agent); 0 when it has none and the API server paces it (API Priority and Fairness).",
    ["client"],
)
API_RETRIES = collector(
    Counter,
    "t9k_client_retries_total",
    "Requests a client sent again after the API server refused them, by client (its user "
    "agent) and reason (TooManyRequests: a 429, retried after its Retry-After).",
    ["client", "reason"],
)
