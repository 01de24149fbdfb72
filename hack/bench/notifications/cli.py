"""The notifications' deliverer (``t9k_operator/integrations/notifications/
outbox.py``) under a burst: ``--jobs`` jobs end within ``--over`` seconds,
each with a message for every endpoint; the endpoints are real HTTP servers
on the loopback (standard library, threads of this process), all fast but
one, which takes ``--slow-seconds`` to answer each request.

The deliverer runs as in the operator, with the jobs' records in a stand-in
of the informers' cache (the API server is not what is measured here: a
job's record is written in the status write its end makes anyway). It says
how long after its job's end each fast endpoint had each message (median,
99th percentile, most), how many the slow one had, the deliverer's queues at
their longest, and the peak resident memory
over what it started with, against the bound the queues set.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any, cast

from t9k_operator.foundation.clock import REAL_CLOCK
from t9k_operator.integrations.notifications.integration import Options
from t9k_operator.integrations.notifications.outbox import Outbox
from t9k_operator.reconcilers.serving import Host, Route


class Endpoint:
    """A receiver: when each delivery id arrived."""

    def __init__(self, delay: float) -> None:
        self.arrived: dict[str, float] = {}
        lock = threading.Lock()
        arrived = self.arrived

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if delay:
                    time.sleep(delay)
                with lock:
                    arrived.setdefault(self.headers.get("X-T9k-Delivery", ""), time.monotonic())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Cache:
    """The informers' cache of jobs or Secrets, as the deliverer reads it."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, str], dict[str, Any]] = {}

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objs.get((str(namespace), name))

    def list(self) -> list[dict[str, Any]]:
        return list(self.objs.values())

    def add_event_handler(self, *args: Any) -> None:
        return None


def secret(name: str, url: str) -> dict[str, Any]:
    data = {"type": "webhook", "url": url, "secret": "bench-key"}
    return {
        "metadata": {"name": name, "namespace": "bench", "labels": {}},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def ended(n: int, endpoints: list[str]) -> dict[str, Any]:
    name = f"job-{n:05d}"
    message = {
        "id": f"{name}-end",
        "event": "succeeded",
        "time": "2026-01-01T00:00:00Z",
        "reason": "Succeeded",
        "message": "every replica succeeded",
        "queuedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "to": [f"bench/{e}" for e in endpoints],
        "deliveries": [],
        "state": "Pending",
    }
    return {
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{n}"},
        "status": {
            "phase": "Succeeded",
            "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:00:00Z",
            "notifications": {"messages": [message]},
        },
    }


def rss_kib(field: str) -> int:
    """The process's resident memory now (VmRSS) or at its peak (VmHWM), KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hack.bench.notifications", description=__doc__)
    p.add_argument("--jobs", type=int, default=10000)
    p.add_argument("--over", type=float, default=60.0, help="seconds the jobs end within")
    p.add_argument("--fast", type=int, default=3, help="fast endpoints")
    p.add_argument("--slow-seconds", type=float, default=5.0)
    p.add_argument("--queue", type=int, default=1000, help="--notification-queue")
    args = p.parse_args(argv)

    fast = [Endpoint(0.0) for _ in range(args.fast)]
    slow = Endpoint(args.slow_seconds)
    names = [f"fast-{i}" for i in range(args.fast)] + ["slow"]
    jobs, secrets = Cache(), Cache()
    for name, ep in zip(names, [*fast, slow], strict=True):
        secrets.objs[("bench", name)] = secret(name, ep.url)
    route = Route(
        cast(Any, SimpleNamespace(kind="PyTorchTrainingJob")), cast(Any, jobs), lambda k, d: None
    )
    ctx = SimpleNamespace(clock=REAL_CLOCK, is_leader=lambda: True)
    host = Host(cast(Any, ctx), {"pytorchtrainingjobs": route}, cast(Any, None), "t9k-system")
    box = Outbox(host, cast(Any, secrets), Options(queue=args.queue))
    box.start()  # its pass over every job, which queues what a full queue turned away

    base = rss_kib("VmRSS")
    ends: dict[str, float] = {}
    longest = 0
    start = time.monotonic()
    try:
        for n in range(args.jobs):
            ahead = start + args.over * n / args.jobs - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            job = ended(n, names)
            jobs.objs[("bench", job["metadata"]["name"])] = job
            ends[f"job-{n:05d}-end"] = time.monotonic()
            box.offer("pytorchtrainingjobs", job)  # the informer's update event
            if n % 100 == 0:
                longest = max(
                    longest, max((len(lane.items) for lane in box._lanes.values()), default=0)
                )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(len(e.arrived) < args.jobs for e in fast):
            time.sleep(0.1)
        peak = rss_kib("VmHWM")
        took = time.monotonic() - start
    finally:
        box.stop()
        for e in [*fast, slow]:
            e.close()
    report(args, fast, slow, ends, took, longest, (peak - base) * 1024)
    return 0 if all(len(e.arrived) == args.jobs for e in fast) else 1


def report(
    args: argparse.Namespace,
    fast: list[Endpoint],
    slow: Endpoint,
    ends: dict[str, float],
    took: float,
    longest: int,
    grew: int,
) -> None:
    lags = [e.arrived[i] - ends[i] for e in fast for i in e.arrived if i in ends]
    print(
        f"{args.jobs} jobs ended over {args.over:g} s, {args.fast} fast endpoints and one "
        f"answering in {args.slow_seconds:g} s; queues of {args.queue}"
    )
    for i, e in enumerate(fast):
        print(f"  fast-{i}: {len(e.arrived)}/{args.jobs} delivered")
    print(
        f"  after its job's end, a fast endpoint had it in: median "
        f"{statistics.median(lags) * 1000:.0f} ms, p99 {pct(lags, 0.99) * 1000:.0f} ms, "
        f"most {max(lags) * 1000:.0f} ms"
    )
    print(f"  the slow endpoint: {len(slow.arrived)} delivered in {took:.0f} s")
    print(f"  the longest queue: {longest} (bound {args.queue})")
    print(
        f"  the peak resident memory over the start: {grew / 2**20:.1f} MiB "
        f"(the {args.jobs} jobs' objects included)"
    )
