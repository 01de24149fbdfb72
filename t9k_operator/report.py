"""Report a training's progress to the t9k operator (docs/progress.md): standard
library only, so it may be copied next to a script. ``report(step=, total_steps=,
epoch=, metrics=)`` in a training, ``python -m t9k_operator.report --step 10`` in
a shell script; the endpoint, token and CA from ``T9K_PROGRESS_URL`` (without it
nothing is sent), ``T9K_PROGRESS_TOKEN_FILE`` and ``T9K_PROGRESS_CA_FILE``. It
never blocks or breaks the training: a background thread sends the latest
report, one at a time, each within ``T9K_PROGRESS_TIMEOUT`` (5 s), at the pace
the answers set (``next``), on a kept connection. The process of each replica
whose local rank is ``T9K_PROGRESS_LOCAL_RANK`` (0), or that calls
:func:`designate`, reports the progress; the others only that they live.

Before the operator stops a job that asks for it (docs/checkpoint.md), its
answers say ``checkpoint``: :func:`checkpoint_requested` turns True and the
callback of :func:`on_checkpoint` is called; the training checkpoints and
tells it with :func:`checkpointed`. ``python -m t9k_operator.report_run``
sends SIGUSR1 instead to a script that does not report.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import logging
import math
import os
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

URL_ENV = "T9K_PROGRESS_URL"
TOKEN_FILE_ENV = "T9K_PROGRESS_TOKEN_FILE"
CA_FILE_ENV = "T9K_PROGRESS_CA_FILE"
TIMEOUT_ENV = "T9K_PROGRESS_TIMEOUT"
LOCAL_RANK_ENV = "T9K_PROGRESS_LOCAL_RANK"
RANK_ENVS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")  # a process's local rank: the first set
RANK_HEADER = "X-T9k-Rank"
DEFAULT_TIMEOUT = 5.0
FLOOR, CEILING = 1.0, 60.0  # the shortest and longest wait between two sends, whatever told
MIN_INTERVAL = FLOOR
# What a kept connection the server has since closed fails with: sent again, once.
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError)
MAX_METRICS = 16  # metrics kept from one report (the first, by name): the operator's most

log = logging.getLogger("t9k_operator.report")


def payload(
    step: int | None = None,
    total_steps: int | None = None,
    epoch: int | float | None = None,
    metrics: Mapping[str, Any] | None = None,
    checkpoint_step: int | None = None,
) -> dict[str, Any] | None:
    """The JSON body of one report; None when nothing in it can be sent. Values
    that are not finite numbers are left out rather than refused."""
    body: dict[str, Any] = {}
    for key, value, kind in (
        ("step", step, int),
        ("totalSteps", total_steps, int),
        ("epoch", epoch, float),
        ("checkpointStep", checkpoint_step, int),
    ):
        number = _number(value, kind)
        if number is not None:
            body[key] = number
    kept: dict[str, float] = {}
    for name in sorted(metrics or {}, key=str)[:MAX_METRICS]:
        number = _number((metrics or {})[name], float)
        if number is not None:
            kept[str(name)] = float(number)
    if kept:
        body["metrics"] = kept
    return body or None


def _number(value: Any, kind: type) -> int | float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if kind is int or number.is_integer() else number


class Reporter:
    """Sends reports to one endpoint from a background thread (started with
    the first report), keeping at most one report waiting: the latest."""

    def __init__(
        self,
        url: str,
        token_file: str | None = None,
        ca_file: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        interval: float = FLOOR,
        *,
        rank: int = 0,
        full: bool = True,
        floor: float = FLOOR,
        ceiling: float = CEILING,
    ) -> None:
        self.url, self.token_file, self.ca_file, self.timeout = url, token_file, ca_file, timeout
        self.interval, self.floor, self.ceiling = interval, floor, ceiling  # the operator's pace
        self.rank, self.full = rank, full  # full: progress, else liveness only
        parts = urllib.parse.urlsplit(url)
        self._host, self._port = parts.hostname or "", parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._conn: http.client.HTTPSConnection | None = None
        self.connections = 0  # connections made (one, while none fails)
        self.sent = 0  # reports the endpoint took
        self.failed = 0  # reports sent that it did not take (or that never reached it)
        self.dropped = 0  # reports replaced by a later one before they were sent
        self._cond = threading.Condition()
        self._pending: dict[str, Any] | None = None
        self._busy = False
        self._thread: threading.Thread | None = None
        self._warned = False
        self._context: ssl.SSLContext | None = None
        self.asked = threading.Event()  # the operator asks for a checkpoint (its last answer)
        self.requests = 0  # the checkpoint requests seen
        self._request: object = None  # the last one's time, as the answer said it
        self.on_checkpoint: Callable[[], object] | None = None

    def report(self, body: dict[str, Any]) -> None:
        """Leave ``body`` for the sender (liveness only, ``{}``, if not ``full``)."""
        if not self.full:
            body = {}  # liveness
        with self._cond:
            if self._pending is not None:  # replaced; a checkpoint in it is kept
                self.dropped += 1
                if "checkpointStep" not in body and "checkpointStep" in self._pending:
                    body = {**body, "checkpointStep": self._pending["checkpointStep"]}
            self._pending = body
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="t9k-progress-report", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait, at most ``timeout`` seconds (default: one send's), until no
        report waits or is being sent. Whether that is so."""
        idle = lambda: self._pending is None and not self._busy  # noqa: E731
        with self._cond:
            return bool(self._cond.wait_for(idle, self.timeout if timeout is None else timeout))

    def _run(self) -> None:
        last = -math.inf
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None)
                # Paced: reports made meanwhile replace the waiting one.
                while (left := last + self.interval - time.monotonic()) > 0:
                    self._cond.wait(left)
                body, self._pending, self._busy = self._pending, None, True
            last = time.monotonic()
            try:
                ok = self.send(body) if body is not None else True
            except Exception as exc:  # never let the thread die
                ok = False
                self._warn(f"unexpected error: {exc!r}")
            with self._cond:
                self._busy = False
                self.sent, self.failed = self.sent + ok, self.failed + (not ok)
                self._cond.notify_all()

    def send(self, body: Mapping[str, Any]) -> bool:
        """POST one report now, within ``timeout``, on the kept connection; whether
        the endpoint took it. Sets :attr:`interval` from the answer."""
        headers = {"Content-Type": "application/json", RANK_HEADER: str(self.rank)}
        if self.token_file:
            try:
                with open(self.token_file, encoding="utf-8") as f:
                    token = f.read().strip()
            except OSError as exc:
                self._warn(f"cannot read the token file {self.token_file}: {exc}")
                self._backoff(None)
                return False
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode()
        try:
            try:
                kept = self._conn is not None
                status, answer, retry = self._post(data, headers)
            except STALE:  # the server closed the kept connection meanwhile: once more
                if not kept:
                    raise
                status, answer, retry = self._post(data, headers)
        except (OSError, ssl.SSLError, ValueError, http.client.HTTPException) as exc:
            self._close()
            self._warn(f"cannot reach the operator at {self.url}: {exc}")
            self._backoff(None)
            return False
        pace, ok = _number(answer.get("next"), float), 200 <= status < 300
        self._backoff(pace if pace is not None or ok else retry, ok)
        if ok:
            self._checkpoint(answer.get("checkpoint") is True, answer.get("checkpointRequestedAt"))
            return True
        self._warn(f"the operator refused a report: HTTP {status} {answer.get('message', '')}")
        return False

    def _checkpoint(self, asked: bool, request: object) -> None:
        """The operator asks for a checkpoint (``request``: when it asked, so a stop
        that asks anew while one asks is told too), or no longer: the callback
        once per request."""
        if not asked:
            self.asked.clear()
        elif not self.asked.is_set() or request != self._request:
            self.requests, self._request = self.requests + 1, request
            self.asked.set()
            try:
                if self.on_checkpoint is not None:
                    self.on_checkpoint()
            except Exception:  # never into the reporter
                log.warning("t9k checkpoint callback failed", exc_info=True)

    def _post(
        self, data: bytes, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, Any], float | None]:
        """One request on the kept connection (made if there is none): the
        status, the JSON answer and its Retry-After. A failure closes it."""
        if self._conn is None:
            self._context = self._context or ssl.create_default_context(cafile=self.ca_file or None)
            self._conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=self._context
            )
            self.connections += 1
        try:
            self._conn.request("POST", self._path, body=data, headers=dict(headers))
            resp = self._conn.getresponse()
            raw = resp.read(65536)
            if resp.will_close or resp.status >= 500:  # another server may answer anew
                self._close()
        except BaseException:
            self._close()
            raise
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {}
        retry = _number(resp.getheader("Retry-After"), float)
        return int(resp.status), answer if isinstance(answer, dict) else {}, retry

    def _backoff(self, told: float | None, ok: bool = False) -> None:
        """The next wait: what the operator told (its pace, or Retry-After), else
        the floor after a report taken and twice the last wait after a failure."""
        wait = told if told is not None else self.floor if ok else 2 * self.interval
        self.interval = min(self.ceiling, max(self.floor, wait))

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _warn(self, message: str) -> None:
        """Say the first failure once (a training's log is no place for more)."""
        if not self._warned:
            self._warned = True
            log.warning("t9k progress report: %s (further failures are not logged)", message)


class _Off:
    """The reporter when the environment names no endpoint: does nothing."""

    def report(self, body: dict[str, Any]) -> None:
        return None

    def flush(self, timeout: float | None = None) -> bool:
        return True


_lock = threading.Lock()
_default: Reporter | _Off | None = None


def from_env(env: Mapping[str, str] | None = None) -> Reporter | _Off:
    """The reporter the environment describes (a no-op without ``T9K_PROGRESS_URL``
    or with a URL that is not HTTPS: a token is never sent in the clear)."""
    env = os.environ if env is None else env
    url = env.get(URL_ENV, "").strip()
    if not url:
        return _Off()
    if not url.lower().startswith("https://"):
        log.warning("t9k progress report: %s is not an https:// URL; not reporting", url)
        return _Off()
    timeout = _number(env.get(TIMEOUT_ENV), float) or DEFAULT_TIMEOUT
    timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
    rank, token, ca = local_rank(env), env.get(TOKEN_FILE_ENV), env.get(CA_FILE_ENV)
    full = rank == (_number(env.get(LOCAL_RANK_ENV), int) or 0)
    return Reporter(url, token or None, ca or None, min(timeout, 60.0), rank=rank, full=full)


def local_rank(env: Mapping[str, str]) -> int:
    """The process's rank within its replica, as its launcher set it (0 without one)."""
    for name in RANK_ENVS:
        rank = _number(env.get(name), int)
        if rank is not None and rank >= 0:
            return int(rank)
    return 0


def designate(full: bool = True) -> None:
    """Make this process its replica's reporting one (``full=False``: liveness
    only), whatever its local rank."""
    if isinstance(reporter := _reporter(), Reporter):
        reporter.full = full


def _reporter() -> Reporter | _Off:
    global _default
    with _lock:
        if _default is None:
            _default = from_env()
            if isinstance(_default, Reporter):
                atexit.register(_default.flush)
        return _default


def checkpoint_requested() -> bool:
    """Whether the operator's last answer asked for a checkpoint (a stop is near)."""
    reporter = _reporter()
    return isinstance(reporter, Reporter) and reporter.asked.is_set()


def on_checkpoint(callback: Callable[[], object] | None) -> None:
    """Call ``callback`` when the operator asks for a checkpoint (on the
    reporter's thread: keep it short, e.g. set a flag the training reads)."""
    if isinstance(reporter := _reporter(), Reporter):
        reporter.on_checkpoint = callback


def checkpointed(step: int) -> None:
    """Tell the operator a checkpoint of ``step`` is written; returns at once."""
    report(checkpoint_step=step)


def report(
    step: int | None = None,
    total_steps: int | None = None,
    epoch: int | float | None = None,
    metrics: Mapping[str, Any] | None = None,
    checkpoint_step: int | None = None,
) -> None:
    """Report the training's progress to the operator; returns at once and never
    raises. ``metrics``: a few named numbers (the first 16 by name are kept);
    ``checkpoint_step``: the step of a checkpoint just written."""
    try:
        body = payload(step, total_steps, epoch, metrics, checkpoint_step)
        if body is not None:
            _reporter().report(body)
    except Exception:  # never into the training
        log.debug("t9k progress report failed", exc_info=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m t9k_operator.report``: one report, sent before it exits (within
    the timeout); exits 0 even when the operator did not take it, so a shell
    script's ``set -e`` never stops on it."""
    parser = argparse.ArgumentParser(
        prog="python -m t9k_operator.report",
        description="Report a training's progress to the t9k operator.",
    )
    parser.add_argument("--step", type=int)
    parser.add_argument("--total-steps", type=int)
    parser.add_argument("--epoch", type=float)
    parser.add_argument("--checkpoint-step", type=int, help="the step of a checkpoint written")
    parser.add_argument(
        "--metric", action="append", default=[], metavar="NAME=VALUE", help="repeatable"
    )
    args = parser.parse_args(argv)
    metrics: dict[str, float] = {}
    for item in args.metric:
        name, sep, value = item.partition("=")
        number = _number(value, float) if sep and name.strip() else None
        if number is None:
            parser.error(f"--metric {item!r}: expected NAME=NUMBER")
        metrics[name.strip()] = float(number)
    body = payload(args.step, args.total_steps, args.epoch, metrics, args.checkpoint_step)
    if body is None:
        parser.error("nothing to report: give one of the options (see --help)")
    reporter = from_env()
    if isinstance(reporter, Reporter) and not reporter.send(body):
        print("t9k progress report: not taken (see above)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    logging.basicConfig(format="%(message)s")
    sys.exit(main())
