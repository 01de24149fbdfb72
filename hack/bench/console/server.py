"""The console under test, in a process of its own (its memory is its own):
``python -m hack.bench.console.server --jobs N``. Its board is fed with
:mod:`.world`'s jobs and pods as the informers would feed it (no API server),
and the console's own app is served by uvicorn on the loopback, as
``t9k console`` serves it. It prints ``ready <port> <token>``, then obeys lines
on its standard input:

- ``churn RATE SECONDS``: change RATE jobs a second (each one's phase moves,
  so its row does) for SECONDS, then print ``churned <count>``;
- ``rss``: print ``rss <VmRSS KiB> <VmHWM KiB>``;
- ``quit``: close the board (its streams end) and stop.

Its sessions take the one-time token any number of times, so that the bench
can open many pages.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import uvicorn

from hack.bench.common.procstat import proc_kib
from hack.bench.console import world
from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.sessions import Session, Sessions

TOKEN = "bench-console-token-0123456789abcdef0123456789"


class ManySessions(Sessions):
    """Sessions whose token is never spent (the bench's pages each exchange it)."""

    def exchange(self, token: str) -> Session | None:
        self._spent = False
        return super().exchange(token)


def fill(board: JobBoard, jobs: int) -> None:
    """``jobs`` jobs and their pods (the pods first: each job's row is made once)."""
    for i in range(jobs):
        for pod in world.pods(i):
            board.put_pod(pod)
        board.put_job(world.job(i))


def churn(board: JobBoard, jobs: int, rate: float, seconds: float) -> int:
    """Change ``rate`` jobs a second for ``seconds``, in ticks of 10 ms."""
    start, done = time.monotonic(), 0
    variants = {}
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(elapsed * rate)
        while done < due:
            i = (done * 7919) % jobs
            phase = "Pending" if (done // jobs) % 2 == 0 else "Running"
            key = (i, phase)
            if key not in variants:
                variants[key] = world.job(i, phase)
            board.put_job(variants[key])
            done += 1
        time.sleep(0.01)
    return done


def commands(board: JobBoard, server: uvicorn.Server, jobs: int) -> None:
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["churn"]:
            count = churn(board, jobs, float(words[1]), float(words[2]))
            print(f"churned {count}", flush=True)
        elif words[:1] == ["rss"]:
            pid = os.getpid()
            print(f"rss {proc_kib(pid, 'VmRSS')} {proc_kib(pid, 'VmHWM')}", flush=True)
        elif words[:1] == ["quit"]:
            break
    board.close()
    server.should_exit = True


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m hack.bench.console.server")
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--distinct-times", action="store_true")
    args = p.parse_args()
    world.DISTINCT_TIMES = args.distinct_times
    board = JobBoard()
    fill(board, args.jobs)
    app = create_app(board, ManySessions(TOKEN), [world.KIND], allowed_hosts=["127.0.0.1"])
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        access_log=False,
        log_config=None,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    started = threading.Event()

    def announce() -> None:
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"ready {port} {TOKEN}", flush=True)
        started.set()
        commands(board, server, args.jobs)

    threading.Thread(target=announce, daemon=True).start()
    server.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
