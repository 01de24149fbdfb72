"""``python -m hack.bench.console``: the console (``t9k console``'s app, in a
process of its own: :mod:`.server`) with its board fed directly with realistic
jobs and pods (:mod:`.world`; no API server: what is measured is the console,
not the informers' list), on the loopback.

(a) With ``--jobs`` jobs (5,000): the server's time to the whole
``GET /api/jobs``, and the Jobs page's first paint with every row in headless
Chromium (:mod:`.browser`; target: under 1.5 s), then its frames and long
tasks while ``--rate`` jobs a second (100) change for ``--seconds``, with the
rate of the updates a stream beside the page received.

(b) With ``--memory-jobs`` jobs (10,000) and ``--streams`` open sessions (20),
each reading the event stream as a page does (HTTP clients of this process,
not browsers): the console process's resident memory (target: under 200 MB),
idle, then after a second of changes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

import httpx2

from hack.bench.common.procstat import proc_cpu
from hack.bench.console import browser

FIRST_PAINT_TARGET_MS = 1500
RSS_TARGET_MB = 200
COLD_SECONDS = 1.2
"""Waited before each request or page measured: longer than the board reuses a
computation of the rows for (``board.REUSE``), so that each computes them."""


@dataclass
class Console:
    """The console process: its URL, token and command pipe."""

    proc: subprocess.Popen[str]
    base: str
    token: str

    def ask(self, line: str, answer: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        while not (got := self.proc.stdout.readline()).startswith(answer):
            if not got:
                raise RuntimeError("the console process ended")
        return got.split()[1:]

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, BrokenPipeError):
            self.ask("quit", "never")
        self.proc.wait(timeout=20)


def start(jobs: int, distinct_times: bool = False) -> Console:
    command = [sys.executable, "-m", "hack.bench.console.server", "--jobs", str(jobs)]
    proc = subprocess.Popen(
        command + ["--distinct-times"] * distinct_times,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    out: IO[str] | None = proc.stdout
    assert out is not None
    line = out.readline().split()
    if line[:1] != ["ready"]:
        raise RuntimeError(f"the console did not start: {line}")
    return Console(proc, f"http://127.0.0.1:{line[1]}", line[2])


def session(console: Console) -> httpx2.Client:
    client = httpx2.Client(base_url=console.base, timeout=httpx2.Timeout(60, read=None))
    assert client.get(f"/?token={console.token}", follow_redirects=False).status_code == 303
    return client


@dataclass
class Counter:
    """Events of one stream: the snapshot's arrival, then each update's."""

    snapshot: threading.Event = field(default_factory=threading.Event)
    updates: list[float] = field(default_factory=list)
    snapshot_bytes: int = 0


def count_events(client: httpx2.Client, counter: Counter) -> None:
    name = ""
    try:
        with client.stream("GET", "/api/jobs/events") as response:
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[len("event: ") :]
                elif line.startswith("data: ") and name == "snapshot":
                    counter.snapshot_bytes = len(line)
                    counter.snapshot.set()
                elif line.startswith("data: "):
                    counter.updates.append(time.monotonic())
    except httpx2.HTTPError:
        return  # closed by the bench


def api_jobs(console: Console, times: int = 5) -> tuple[list[float], list[float], int]:
    """Seconds to the whole ``GET /api/jobs``, ``times`` times, the console
    process's CPU seconds for each (the machine's load aside), and its size."""
    seconds, cpu, size = [], [], 0
    client = session(console)
    try:
        for _ in range(times):
            time.sleep(COLD_SECONDS)
            t, c = time.perf_counter(), proc_cpu(console.proc.pid)
            body = client.get("/api/jobs").content
            seconds.append(time.perf_counter() - t)
            cpu.append(proc_cpu(console.proc.pid) - c)
            size = len(body)
            assert json.loads(body)["rows"]
    finally:
        client.close()
    return seconds, cpu, size


def smooth(console: Console, page: object, args: argparse.Namespace) -> None:
    """The page's frames and long tasks while ``--rate`` jobs a second change,
    and the updates a stream beside it had."""
    counter = Counter()
    beside = session(console)
    threading.Thread(target=count_events, args=(beside, counter), daemon=True).start()
    counter.snapshot.wait(60)

    def churn() -> float:
        t = time.monotonic()
        console.ask(f"churn {args.rate} {args.seconds}", "churned")
        return time.monotonic() - t

    s = browser.smoothness(page, churn)
    beside.close()
    got = len(counter.updates)
    print(
        f"  {args.rate} jobs/s changing for {s.seconds:.1f} s: the stream beside "
        f"the page had {got} updates ({got / s.seconds:.0f}/s)"
    )
    print(
        f"  the page: {s.frames} frames ({s.frames / s.seconds:.0f}/s), frame time "
        f"median {s.frame_median_ms:.0f} ms, p95 {s.frame_p95_ms:.0f} ms, "
        f"most {s.frame_max_ms:.0f} ms; {s.long_tasks} long tasks, "
        f"{s.long_task_ms:.0f} ms in all ({100 * s.long_task_ms / 1000 / s.seconds:.0f}% "
        f"of the time), longest {s.long_task_max_ms:.0f} ms; {s.rows} rows"
    )


def part_a(args: argparse.Namespace) -> None:
    from playwright.sync_api import sync_playwright

    console = start(args.jobs, args.distinct_times)
    try:
        seconds, cpu, size = api_jobs(console)
        print(f"(a) {args.jobs} jobs, each with 2 pods on the board")
        print(
            f"  GET /api/jobs: {size / 1e6:.2f} MB, first {seconds[0] * 1000:.0f} ms, "
            f"median {statistics.median(seconds) * 1000:.0f} ms of {len(seconds)}; the console's "
            f"CPU time for one: median {statistics.median(cpu) * 1000:.0f} ms"
        )
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=args.chromium)
            paints = []
            for _ in range(args.loads):
                time.sleep(COLD_SECONDS)
                page = chromium.new_page(viewport={"width": 1600, "height": 1000})
                paints.append(browser.first_paint(page, f"{console.base}/?token={console.token}"))
                page.close()
            for p in paints:
                print(
                    f"  first paint: HTML {p.html_ms:.0f} ms, header painted {p.fcp_ms:.0f} ms, "
                    f"{p.rows} rows in the table {p.rendered_ms:.0f} ms, "
                    f"painted {p.painted_ms:.0f} ms"
                )
            painted = statistics.median(p.painted_ms for p in paints)
            verdict = "met" if painted < FIRST_PAINT_TARGET_MS else "MISSED"
            print(
                f"  first paint of the page with its rows, median: {painted:.0f} ms "
                f"(target {FIRST_PAINT_TARGET_MS} ms: {verdict})"
            )
            page = chromium.new_page(viewport={"width": 1600, "height": 1000})
            browser.first_paint(page, f"{console.base}/?token={console.token}")
            smooth(console, page, args)
            chromium.close()
    finally:
        console.stop()


def part_b(args: argparse.Namespace) -> None:
    t = time.monotonic()
    console = start(args.memory_jobs, args.distinct_times)
    loaded = time.monotonic() - t
    try:
        idle = [int(x) / 1024 for x in console.ask("rss", "rss")]
        clients = [session(console) for _ in range(args.streams)]
        counters = [Counter() for _ in clients]
        for client, counter in zip(clients, counters, strict=True):
            threading.Thread(target=count_events, args=(client, counter), daemon=True).start()
        for counter in counters:
            counter.snapshot.wait(120)
        open_ = sum(c.snapshot.is_set() for c in counters)
        streams = [int(x) / 1024 for x in console.ask("rss", "rss")]
        console.ask(f"churn {args.rate} 5", "churned")
        time.sleep(1)
        churned = [int(x) / 1024 for x in console.ask("rss", "rss")]
        for client in clients:
            client.close()
        print(f"(b) {args.memory_jobs} jobs (2 pods each) on the board (filled in {loaded:.0f} s)")
        print(f"  the console's RSS idle: {idle[0]:.0f} MiB")
        print(
            f"  with {open_} of {args.streams} sessions reading the stream "
            f"(snapshot {counters[0].snapshot_bytes / 1e6:.2f} MB each): {streams[0]:.0f} MiB"
        )
        print(
            f"  after 5 s of {args.rate} jobs/s changing: {churned[0]:.0f} MiB; "
            f"peak {churned[1]:.0f} MiB"
        )
        verdict = "met" if churned[1] * 1.048576 < RSS_TARGET_MB else "MISSED"
        print(f"  peak {churned[1] * 1.048576:.0f} MB (target {RSS_TARGET_MB} MB: {verdict})")
    finally:
        console.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hack.bench.console", description=__doc__)
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--loads", type=int, default=3, help="first paints measured")
    p.add_argument("--rate", type=int, default=100, help="jobs changed a second")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--memory-jobs", type=int, default=10000)
    p.add_argument("--streams", type=int, default=20)
    p.add_argument("--chromium", default=os.environ.get("CHROMIUM", browser.CHROMIUM))
    p.add_argument("--only", choices=("a", "b"), default=None)
    p.add_argument(
        "--distinct-times",
        action="store_true",
        help="each job and its pods with times of their own (default: all the same)",
    )
    args = p.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if args.only != "b":
        part_a(args)
    if args.only != "a":
        part_b(args)
    return 0
