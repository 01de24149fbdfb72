"""``connections``: reporters unpaced, a new TLS connection per report
against one kept."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from t9k_operator.integrations.progress.pods import job_path
from t9k_operator.report import Reporter

from ..common.figures import quantile
from .world import KIND, served, world


def connections(reporters: int, seconds: float, workdir: Path, keep: bool) -> tuple[float, ...]:
    endpoint, _, _ = world({"bench": reporters}, qps=1e9, burst=10**9)
    with served(endpoint, workdir) as (port, ca, _):
        url = f"https://127.0.0.1:{port}{job_path('ns', KIND.plural, 'bench')}"
        latencies: list[list[float]] = [[] for _ in range(reporters)]
        stop = time.monotonic() + seconds

        def report(i: int) -> None:
            token = workdir / f"token-{i}"
            token.write_text(f"t:bench:{i}\n")
            r = Reporter(url, token_file=str(token), ca_file=str(ca), timeout=10)
            step = 0
            while time.monotonic() < stop:
                started = time.monotonic()
                if r.send({"step": step, "totalSteps": 10**6, "metrics": {"loss": 0.5}}):
                    latencies[i].append(time.monotonic() - started)
                if not keep:
                    r._close()  # a new connection (and TLS handshake) for every report
                step += 1

        threads = [threading.Thread(target=report, args=(i,)) for i in range(reporters)]
        began = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - began
    every = [x for xs in latencies for x in xs]
    return len(every) / took, quantile(every, 0.5), quantile(every, 0.99)


def part_connections(workdir: Path, counts: list[int], seconds: float) -> None:
    print("\n## connections: reporters unpaced, a new connection per report vs one kept")
    print(
        f"{'reporters':>9} {'new conn/s':>10} {'kept/s':>8} {'ratio':>6} {'p50 new':>8} "
        f"{'p50 kept':>9} {'p99 new':>8} {'p99 kept':>9}"
    )
    for n in counts:
        new = connections(n, seconds, workdir, keep=False)
        kept = connections(n, seconds, workdir, keep=True)
        print(
            f"{n:>9} {new[0]:>10.0f} {kept[0]:>8.0f} {kept[0] / new[0]:>5.1f}x "
            f"{new[1] * 1e3:>6.1f}ms {kept[1] * 1e3:>7.1f}ms {new[2] * 1e3:>6.1f}ms "
            f"{kept[2] * 1e3:>7.1f}ms"
        )
