"""The reporting ranks' process: many ranks of training jobs, each on its
own kept TLS connection to a progress endpoint (asyncio, one connection a
rank, as ``report.Reporter`` does: keep the connection, wait the answer's
``next``), in a process of their own so the endpoint's process does nothing
else. Run as ``python -m hack.bench.common.reporters SPEC``: SPEC is a JSON
file (the endpoint's port and CA, when to stop, and the ranks: each one's
path, token, rank, pacing, group and start delay); each report's group,
status, latency and time are written to ``SPEC.out``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import sys
import time
from pathlib import Path
from typing import Any

ERRORS: dict[str, int] = {}


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


def main(spec_file: str) -> int:
    """Run the ranks of the spec in ``spec_file``; their results beside it (``.out``)."""
    spec = json.loads(Path(spec_file).read_text())
    out = asyncio.run(_reporters(spec))
    if ERRORS:
        print(f"  (reporters' errors: {ERRORS})")
    Path(spec_file + ".out").write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
