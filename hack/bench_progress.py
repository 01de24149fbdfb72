#!/usr/bin/env python3
"""Benchmark: the operator's progress endpoint under many reporting processes.

Four parts, each printed with its figures (``--parts`` picks some):

``connections``
    The endpoint as the operator serves it (``integrations/progress/server``'s
    event loop serving ``integrations/progress/endpoint.ProgressEndpoint``) and N reporters
    (``report.Reporter.send``) sending unpaced for a few seconds, once with a
    new TLS connection per report and once with the connection kept: reports
    a second, p50/p99, and the ratio.
``hang``
    A simulation on a fake clock, no sockets: the endpoint's ``handle`` driven
    by 1,000 replicas of 8 ranks (rank 0 reports progress, the others
    liveness), each rank sending again when the answer's ``next`` says, for
    10 minutes, the job's ``hangTimeoutSeconds`` 60; one replica goes silent
    at minute 5. The hang rule (the oldest pod heard, against the timeout) is
    checked every simulated second: healthy replicas never judged hung, the
    silent one caught within its window.
``fairness``
    The served endpoint; a 512-rank job (64 pods of 8) sends as fast as it may
    (once at the told pace, once ignoring it, on every connection at once)
    while 50 small jobs (one pod of 8 ranks each) report at their pace: the
    latency of the small jobs' reports (p50, p99) and the 429s of each.
``scale``
    The served endpoint holding 10,000 ranks (1,250 pods of 8, in 10 jobs),
    each on its own kept connection at the told pace: reports a second, the
    endpoint's CPU (its process's and its front's CPU time over the wall
    time, in cores) in the steady state, p50/p99 and 429s.

The reporting processes of ``fairness`` and ``scale`` run in a process of
their own (asyncio, one connection each, as ``report.Reporter`` does: keep
the connection, wait ``next``); the endpoint's process does nothing else, so
its CPU time and its front's (the process holding the connections) are the
endpoint's. The TokenReview is answered in process (once
per token, remembered as in the operator).

Run: ``.venv/bin/python -m hack.bench_progress [--parts connections,hang,fairness,scale]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hack.procstat import proc_cpu, proc_kib
from t9k_operator.integrations.progress.endpoint import ProgressEndpoint
from t9k_operator.integrations.progress.pods import job_path
from t9k_operator.integrations.progress.server import ProgressServer
from t9k_operator.integrations.progress.store import Coalescer, ProgressStore
from t9k_operator.reconcilers.serving import Route
from t9k_operator.report import Reporter
from t9k_operator.resources import Resource
from t9k_operator.runtime import certs, tls

ROOT = Path(__file__).resolve().parents[1]

KIND = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
AUDIENCE = "t9k-operator-progress"
HANG = 60
ERRORS: dict[str, int] = {}


class FakeClock:
    """Time that moves only when the simulation says."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall = datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.mono

    def now(self) -> datetime:
        return self.wall + timedelta(seconds=self.mono - 1000.0)

    def sleep(self, seconds: float) -> None:
        self.mono += seconds


class Cache:
    def __init__(self, objs: dict[tuple[str, str], Any]) -> None:
        self.objs = objs

    def get(self, namespace: str, name: str) -> Any:
        return self.objs.get((namespace, name))

    def add_event_handler(self, **_: Any) -> None:
        return None


class Reviews:
    """The API server's TokenReview: token ``t:<job>:<pod>`` is pod ``<job>-<pod>``'s."""

    def __init__(self) -> None:
        self.asked = 0

    def create(self, resource: Resource, body: Any) -> Any:
        self.asked += 1
        _, job, pod = body["spec"]["token"].split(":")
        return {
            "status": {
                "authenticated": True,
                "audiences": [AUDIENCE],
                "user": {
                    "username": "system:serviceaccount:ns:default",
                    "extra": {
                        "authentication.kubernetes.io/pod-name": [f"{job}-{pod}"],
                        "authentication.kubernetes.io/pod-uid": [f"uid-{job}-{pod}"],
                    },
                },
            }
        }


def world(
    jobs: dict[str, int], hang: int | None = None, **kw: Any
) -> tuple[ProgressEndpoint, ProgressStore, Reviews]:
    """An endpoint for ``jobs`` (name -> pods), as the operator builds it."""
    objs: dict[tuple[str, str], Any] = {}
    pods: dict[tuple[str, str], Any] = {}
    for name, count in jobs.items():
        spec = {"runPolicy": {"progress": {"hangTimeoutSeconds": hang}}} if hang else {}
        meta = {"namespace": "ns", "name": name, "uid": f"uid-{name}"}
        objs[("ns", name)] = {"metadata": meta, "spec": spec}
        owner = {"kind": KIND.kind, "name": name, "uid": f"uid-{name}", "controller": True}
        for i in range(count):
            pod = {"name": f"{name}-{i}", "uid": f"uid-{name}-{i}", "ownerReferences": [owner]}
            pods[("ns", f"{name}-{i}")] = {"metadata": pod}
    store, reviews = ProgressStore(), Reviews()
    endpoint = ProgressEndpoint(
        reviews,  # type: ignore[arg-type]
        {KIND.plural: Route(KIND, Cache(objs), lambda key, delay: None)},  # type: ignore[arg-type]
        Cache(pods),  # type: ignore[arg-type]
        store,
        Coalescer(),
        AUDIENCE,
        **kw,
    )
    return endpoint, store, reviews


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")


@contextmanager
def served(endpoint: ProgressEndpoint, workdir: Path) -> Iterator[tuple[int, Path, ProgressServer]]:
    """``endpoint`` on TLS at 127.0.0.1: its port, its CA file and its server."""
    where = workdir / "certs"
    where.mkdir(exist_ok=True)
    ca, ca_key = certs.new_ca("bench CA")
    cert, key = certs.new_serving(ca, ca_key, ["127.0.0.1"])
    for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
        (where / name).write_bytes(data)
    server = ProgressServer(("127.0.0.1", 0), endpoint, tls.DirSource(where))
    server.start()
    try:
        yield server.port, where / "ca.crt", server
    finally:
        server.stop()


# -- connections ----------------------------------------------------------------------


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


# -- hang (simulated) -----------------------------------------------------------------


def part_hang(replicas: int = 1000, ranks: int = 8, minutes: float = 10.0) -> None:
    print(
        f"\n## hang: {replicas} replicas x {ranks} ranks, hangTimeoutSeconds {HANG}, "
        f"{minutes:g} simulated minutes, fake clock"
    )
    clock = FakeClock()
    endpoint, store, _ = world({"big": replicas}, hang=HANG, clock=clock)
    path = job_path("ns", KIND.plural, "big")
    start, end = clock.mono, clock.mono + minutes * 60
    silent_pod, silent_at = replicas // 2, start + minutes * 30
    due = [
        (start + (i % 1000) / 1000, pod, rank)
        for i, (pod, rank) in enumerate((p, r) for p in range(replicas) for r in range(ranks))
    ]
    heapq.heapify(due)
    statuses: dict[int, int] = {}
    nexts: list[float] = []
    steady_429 = 0
    verdicts: list[tuple[float, str]] = []
    worst_healthy = 0.0
    next_check = start + 1.0
    began = time.process_time()
    while due and due[0][0] < end:
        at, pod, rank = heapq.heappop(due)
        while next_check <= at:  # the hang rule, each simulated second
            clock.mono = next_check
            now = clock.now()
            for r in store.latest("uid-big"):
                silence = (now - r.last_heard).total_seconds()
                if silence >= HANG and not any(v[1] == r.pod for v in verdicts):
                    verdicts.append((next_check - start, r.pod))
                if r.pod != f"big-{silent_pod}":
                    worst_healthy = max(worst_healthy, silence)
            next_check += 1.0
        clock.mono = at
        if pod == silent_pod and at >= silent_at:
            continue  # this replica went silent
        body = b'{"step": 1, "totalSteps": 100}' if rank == 0 else b"{}"
        headers = {"Authorization": f"Bearer t:big:{pod}", "X-T9k-Rank": str(rank)}
        answer = endpoint.handle("POST", path, headers, body)
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        if answer.status == 429 and at >= start + 120:
            steady_429 += 1
        wait = answer.next if answer.next is not None else answer.retry_after or 1.0
        nexts.append(wait)
        heapq.heappush(due, (at + min(60.0, max(1.0, wait)), pod, rank))
    cpu = time.process_time() - began
    total = sum(statuses.values())
    print(
        f"reports {total} ({total / (end - start):.0f} a second), "
        f"202: {statuses.get(202, 0)}, 429: {statuses.get(429, 0)} "
        f"({statuses.get(429, 0) / total:.2%}), other: "
        f"{total - statuses.get(202, 0) - statuses.get(429, 0)}; 429s after the first "
        f"2 minutes (every token reviewed): {steady_429}"
    )
    print(
        f"next told: p50 {quantile(nexts, 0.5):.1f} s, max {max(nexts):.1f} s; longest silence "
        f"of a healthy replica {worst_healthy:.0f} s = {worst_healthy / HANG:.2f} of the timeout"
    )
    healthy = [v for v in verdicts if v[1] != f"big-{silent_pod}"]
    caught = [v[0] for v in verdicts if v[1] == f"big-{silent_pod}"]
    went = silent_at - start
    print(
        f"healthy replicas judged hung: {len(healthy)}; the silent replica (silent at "
        f"{went:.0f} s) judged hung at "
        + (
            f"{caught[0]:.0f} s, {caught[0] - went:.0f} s after it went silent "
            f"= {(caught[0] - went) / HANG:.2f} of the timeout"
            if caught
            else "never"
        )
    )
    print(f"(simulation CPU {cpu:.1f} s for {total} handled: {cpu / total * 1e6:.0f} us a report)")


# -- the reporters' process (fairness, scale) -----------------------------------------


async def _answer(reader: asyncio.StreamReader) -> tuple[int, Any]:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, json.loads(await reader.readexactly(length))


async def _rank(
    spec: dict[str, Any],
    ctx: ssl.SSLContext,
    rank: dict[str, Any],
    out: list[tuple[str, int, float, float]],
    ended: asyncio.Event,
) -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(rank["delay"])
    stop = spec["stop"]
    data = b'{"step": 1, "totalSteps": 100}' if rank["rank"] == 0 else b"{}"
    head = (
        f"POST {rank['path']} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        f"{rank['token']}\r\nX-T9k-Rank: {rank['rank']}\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode()
    writer: asyncio.StreamWriter | None = None
    while time.time() < stop and not ended.is_set():
        try:
            if writer is None:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", spec["port"], ssl=ctx), 20
                )
            t0 = loop.time()
            assert reader is not None and writer is not None
            writer.write(head + data)
            status, answer = await asyncio.wait_for(_answer(reader), 10)
            out.append((rank["group"], status, loop.time() - t0, time.time()))
            wait = answer.get("next", 1.0) if rank["paced"] else 0.0
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            if writer is not None:
                writer.close()
            out.append((rank["group"], 0, 0.0, time.time()))
            ERRORS[type(exc).__name__] = ERRORS.get(type(exc).__name__, 0) + 1
            writer, wait = None, 1.0
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), max(0.0, min(60.0, wait, stop - time.time())))
    if writer is not None:
        writer.close()


async def _reporters(spec: dict[str, Any]) -> list[tuple[str, int, float, float]]:
    ctx = ssl.create_default_context(cafile=spec["ca"])
    out: list[tuple[str, int, float, float]] = []
    ended = asyncio.Event()  # set when the file ``spec["done"]`` appears: the run ends early
    watcher = asyncio.create_task(_watch_done(spec.get("done"), ended))
    await asyncio.gather(*(_rank(spec, ctx, r, out, ended) for r in spec["ranks"]))
    watcher.cancel()
    return out


async def _watch_done(path: str | None, ended: asyncio.Event) -> None:
    while path is not None and not Path(path).exists():
        await asyncio.sleep(0.5)
    if path is not None:
        ended.set()


def reporters_main(spec_file: str) -> int:
    spec = json.loads(Path(spec_file).read_text())
    out = asyncio.run(_reporters(spec))
    if ERRORS:
        print(f"  (reporters' errors: {ERRORS})")
    Path(spec_file + ".out").write_text(json.dumps(out))
    return 0


def drive(
    endpoint: ProgressEndpoint,
    workdir: Path,
    ranks: list[dict[str, Any]],
    seconds: float,
    measure_from: float,
) -> tuple[list[Any], Cost]:
    """Run ``ranks`` in a process of their own against ``endpoint`` served here:
    their results and what the endpoint spent from ``measure_from`` on."""
    with served(endpoint, workdir) as (port, ca, server):
        began = time.time()
        spec = {"port": port, "ca": str(ca), "stop": began + seconds, "ranks": ranks}
        spec_file = workdir / "spec.json"
        spec_file.write_text(json.dumps(spec))
        child = subprocess.Popen(
            [sys.executable, "-m", "hack.bench_progress", "_reporters", str(spec_file)], cwd=ROOT
        )
        time.sleep(measure_from)
        assert server.front is not None and server.fronts_started == 1
        cpu0, front0, wall0 = time.process_time(), proc_cpu(server.front.pid), time.monotonic()
        time.sleep(max(0.0, began + seconds - time.time()))
        wall = time.monotonic() - wall0
        front = proc_cpu(server.front.pid) - front0
        rss = proc_kib(server.front.pid, "VmRSS") / 1024
        cost = Cost((time.process_time() - cpu0) / wall, front / wall, rss)
        child.wait()
    out = json.loads((workdir / "spec.json.out").read_text())
    return [x for x in out if x[3] >= began + measure_from], cost


@dataclass(frozen=True)
class Cost:
    """What the endpoint spent: its CPU in cores, in the operator's interpreter
    (the answers) and in its front (the connections), and its front's memory."""

    answers: float
    front: float
    front_rss_mib: float

    @property
    def cores(self) -> float:
        return self.answers + self.front

    def __str__(self) -> str:
        return f"{self.cores:.2f} cores (answers {self.answers:.2f}, front {self.front:.2f})"


def rank_specs(
    job: str, pods: int, ranks: int, paced: bool, group: str, ramp: float
) -> list[dict[str, Any]]:
    path = job_path("ns", KIND.plural, job)
    return [
        {
            "path": path,
            "token": f"t:{job}:{p}",
            "rank": r,
            "paced": paced,
            "group": group,
            "delay": ramp * ((p * ranks + r) % 997) / 997,
        }
        for p in range(pods)
        for r in range(ranks)
    ]


def summary(results: list[Any], group: str, seconds: float) -> str:
    mine = [x for x in results if x[0] == group]
    lat = [x[2] for x in mine if x[1] == 202]
    n429 = sum(1 for x in mine if x[1] == 429)
    other = sum(1 for x in mine if x[1] not in (202, 429))
    return (
        f"{len(mine) / seconds:>8.0f}/s  p50 {quantile(lat, 0.5) * 1e3:>7.1f} ms  "
        f"p99 {quantile(lat, 0.99) * 1e3:>7.1f} ms  429s {n429} "
        f"({n429 / max(1, len(mine)):.1%})  errors {other}"
    )


def part_fairness(workdir: Path, seconds: float) -> None:
    print(
        f"\n## fairness: a 512-rank job as fast as it may, 50 small jobs (8 ranks each), "
        f"{seconds:g} s measured"
    )
    jobs = {"noisy": 64, **{f"small{j}": 1 for j in range(50)}}
    for paced in (True, False):
        endpoint, _, _ = world(jobs)
        ranks = rank_specs("noisy", 64, 8, paced, "noisy", 2.0)
        for j in range(50):
            ranks += rank_specs(f"small{j}", 1, 8, True, "small", 2.0)
        results, cost = drive(endpoint, workdir, ranks, seconds + 10, 10)
        how = "at the told pace" if paced else "ignoring the pace"
        print(f"noisy job {how}: endpoint CPU {cost}")
        print(f"  noisy  {summary(results, 'noisy', seconds)}")
        print(f"  small  {summary(results, 'small', seconds)}")


def part_scale(workdir: Path, seconds: float, ramp: float, pods: int) -> None:
    print(
        f"\n## scale: {pods * 8:,} ranks ({pods:,} pods x 8, 10 jobs) at the default pace, "
        f"connecting over {ramp:g} s, then {seconds:g} s measured"
    )
    endpoint, _, reviews = world({f"job{j}": pods // 10 for j in range(10)})
    ranks: list[dict[str, Any]] = []
    for j in range(10):
        ranks += rank_specs(f"job{j}", pods // 10, 8, True, "all", ramp)
    results, cost = drive(endpoint, workdir, ranks, ramp + seconds, ramp)
    print(
        f"ranks counted {endpoint.pacer.ranks}, pace {endpoint.pacer.pace():.1f} s, "
        f"token reviews {reviews.asked}"
    )
    print(f"  all    {summary(results, 'all', seconds)}")
    print(f"endpoint CPU {cost} = {cost.cores / 0.5:.2f} of the half core allowed")
    print(f"the front's RSS {cost.front_rss_mib:.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_reporters"]:
        return reporters_main(argv[1])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="connections,hang,fairness,scale")
    p.add_argument("--reporters", default="1,8,32", help="connections: counts of reporters")
    p.add_argument("--seconds", type=float, default=5.0, help="connections: seconds a count")
    p.add_argument("--fair-seconds", type=float, default=30.0)
    p.add_argument("--scale-seconds", type=float, default=120.0)
    p.add_argument("--ramp", type=float, default=240.0, help="scale: seconds ranks connect over")
    p.add_argument("--scale-pods", type=int, default=1250, help="scale: pods of 8 ranks")
    args = p.parse_args(argv)
    parts = args.parts.split(",")
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="t9k-bench-progress-") as tmp:
        if "connections" in parts:
            counts = [int(x) for x in args.reporters.split(",")]
            part_connections(Path(tmp), counts, args.seconds)
        if "hang" in parts:
            part_hang()
        if "fairness" in parts:
            part_fairness(Path(tmp), args.fair_seconds)
        if "scale" in parts:
            part_scale(Path(tmp), args.scale_seconds, args.ramp, args.scale_pods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
