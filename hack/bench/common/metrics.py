"""Reading a process's /metrics text (Prometheus's format): its samples, and
the requests a client of the API server counts."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator

# The operator's reads, from its own rest_client_requests_total: its client
# labels a request by its HTTP method, so gets, lists and the start of a watch
# are all GET; the others are there should a client ever label them apart.
READ_METHODS = ("GET", "LIST", "WATCH")
REQUESTS_METRIC = "rest_client_requests_total"
INFORMER_METRIC = "t9k_informer_requests_total"


def scrape(port: int) -> str:
    """The /metrics text served at 127.0.0.1:``port``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return str(resp.read().decode())


def samples(metrics: str, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """Each sample of the labelled metric ``name`` in a /metrics text: its
    labels and its value."""
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line.partition("}")[0]))
            yield labels, float(line.rpartition(" ")[2])


def count_requests(metrics: str, methods: tuple[str, ...] = READ_METHODS) -> int | None:
    """The requests of ``methods`` in a process's ``rest_client_requests_total``
    (every code and host), from its /metrics text; None when it has none."""
    found = list(samples(metrics, REQUESTS_METRIC))
    if not found:
        return None
    return int(sum(v for labels, v in found if labels.get("method", "").upper() in methods))


def informer_requests(metrics: str) -> int | None:
    """The informers' own requests (list pages and watches, every resource)
    in a process's ``t9k_informer_requests_total``; None when it has none."""
    found = [v for _, v in samples(metrics, INFORMER_METRIC)]
    return int(sum(found)) if found else None
