#!/usr/bin/env python3
"""Benchmark: how many progress reports the operator's endpoint takes a second.

Runs the endpoint as the operator does (``runtime/tls.TLSServer`` serving
``reconcilers/progress/endpoint.ProgressEndpoint``: TLS, the token's review, the
pod's ownership, the report's bounds, the store, the coalescer) in this
process, with its own certificate, and N reporters sending as replicas do
(``t9k_operator/report.Reporter.send``: a new TLS connection per report, the
token read from its file) as fast as they can, unpaced, for a few seconds.
The TokenReview is answered in process (a token is reviewed once and then
remembered, as in the operator; a real review costs one API request per token
per minute), and the per-job rate limit is lifted so that it measures the
endpoint, not the limit.

Prints reports taken per second and the latency of one report (p50, p99),
for each number of reporters. The reporters run on the same machine and take
their share of the CPU (a TLS handshake costs the client about what it costs
the server), so the figure is a lower bound for the endpoint alone.

Run: ``.venv/bin/python hack/bench_progress.py [--reporters 1,8,32] [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from t9k_operator.reconcilers.integrations.progress_pods import job_path  # noqa: E402
from t9k_operator.reconcilers.progress.endpoint import (  # noqa: E402
    ProgressEndpoint,
    handler_for,
)
from t9k_operator.reconcilers.progress.store import Coalescer, ProgressStore  # noqa: E402
from t9k_operator.reconcilers.serving import Route  # noqa: E402
from t9k_operator.report import Reporter  # noqa: E402
from t9k_operator.resources import Resource  # noqa: E402
from t9k_operator.runtime import tls  # noqa: E402

KIND = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
AUDIENCE = "t9k-operator-progress"


class Cache:
    def __init__(self, objs: dict[tuple[str, str], Any]) -> None:
        self.objs = objs

    def get(self, namespace: str, name: str) -> Any:
        return self.objs.get((namespace, name))

    def add_event_handler(self, **_: Any) -> None:
        return None


class Reviews:
    """The API server's TokenReview: token ``t<i>`` is pod ``bench-worker-<i>``'s."""

    def __init__(self) -> None:
        self.asked = 0

    def create(self, resource: Resource, body: Any) -> Any:
        self.asked += 1
        i = body["spec"]["token"][1:]
        return {
            "status": {
                "authenticated": True,
                "audiences": [AUDIENCE],
                "user": {
                    "username": "system:serviceaccount:ns:default",
                    "extra": {
                        "authentication.kubernetes.io/pod-name": [f"bench-worker-{i}"],
                        "authentication.kubernetes.io/pod-uid": [f"uid-{i}"],
                    },
                },
            }
        }


def run(reporters: int, seconds: float, workdir: Path) -> tuple[float, float, float, int]:
    owner = {"kind": KIND.kind, "name": "bench", "uid": "job-uid", "controller": True}
    pods = {
        ("ns", f"bench-worker-{i}"): {
            "metadata": {"name": f"bench-worker-{i}", "uid": f"uid-{i}", "ownerReferences": [owner]}
        }
        for i in range(reporters)
    }
    jobs = {("ns", "bench"): {"metadata": {"namespace": "ns", "name": "bench", "uid": "job-uid"}}}
    reviews = Reviews()
    queued: list[str] = []
    endpoint = ProgressEndpoint(
        reviews,  # type: ignore[arg-type]
        {KIND.plural: Route(KIND, Cache(jobs), lambda key, delay: queued.append(key))},  # type: ignore[arg-type]
        Cache(pods),  # type: ignore[arg-type]
        ProgressStore(),
        Coalescer(),
        AUDIENCE,
        qps=1e9,
        burst=10**9,
    )
    certs = workdir / "certs"
    certs.mkdir(exist_ok=True)
    ca, ca_key = certs.new_ca("bench CA")
    cert, key = certs.new_serving(ca, ca_key, ["127.0.0.1"])
    for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
        (certs / name).write_bytes(data)
    server = tls.TLSServer(("127.0.0.1", 0), handler_for(endpoint), tls.DirSource(certs))
    server.start()
    url = f"https://127.0.0.1:{server.port}{job_path('ns', KIND.plural, 'bench')}"
    latencies: list[list[float]] = [[] for _ in range(reporters)]
    failed: list[int] = [0] * reporters
    stop = time.monotonic() + seconds

    def report(i: int) -> None:
        token = workdir / f"token-{i}"
        token.write_text(f"t{i}\n")
        r = Reporter(url, token_file=str(token), ca_file=str(certs / "ca.crt"), timeout=10)
        step = 0
        while time.monotonic() < stop:
            started = time.monotonic()
            ok = r.send({"step": step, "totalSteps": 10**6, "metrics": {"loss": 0.5}})
            if ok:
                latencies[i].append(time.monotonic() - started)
            else:
                failed[i] += 1
            step += 1

    threads = [threading.Thread(target=report, args=(i,)) for i in range(reporters)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - began
    server.stop()
    every = sorted(x for xs in latencies for x in xs)
    lost: int = sum(failed)
    if lost or not every:
        raise SystemExit(f"{lost} reports failed with {reporters} reporters")
    p99 = every[min(len(every) - 1, int(len(every) * 0.99))]
    return len(every) / took, statistics.median(every), p99, reviews.asked


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reporters", default="1,8,32", help="comma-separated counts of reporters")
    p.add_argument("--seconds", type=float, default=5.0, help="seconds each count runs")
    args = p.parse_args(argv)
    print(f"{'reporters':>9} {'reports/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'reviews':>8}")
    with tempfile.TemporaryDirectory(prefix="t9k-bench-progress-") as tmp:
        for n in (int(x) for x in args.reporters.split(",")):
            rate, p50, p99, asked = run(n, args.seconds, Path(tmp))
            print(f"{n:>9} {rate:>10.0f} {p50 * 1000:>8.1f} {p99 * 1000:>8.1f} {asked:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
