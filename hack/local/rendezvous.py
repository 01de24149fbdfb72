#!/usr/bin/env python3
"""A stand-in training program for ``t9k run --local``: checks that the
environment the replicas get is coherent, with the standard library only.

Every replica reads its kind's variables:

* torch style (PyTorch, DeepSpeed, ColossalAI): ``RANK``, ``WORLD_SIZE``,
  ``MASTER_ADDR``, ``MASTER_PORT`` (and ``LOCAL_RANK`` or ``--local_rank=N``);
* MindSpore (MSJob): ``MS_ROLE``, ``MS_SCHED_HOST``, ``MS_SCHED_PORT``,
  ``MS_WORKER_NUM``, ``MS_SERVER_NUM``, ``MS_NODE_ID``;
* TensorFlow (TensorFlowTrainingJob): ``TF_CONFIG``, read torch style: the
  cluster's tasks in TF_CONFIG's order (chief, worker, ps) are the ranks, the
  first (the chief, else worker 0) is the master at its own task's address.

The master (rank 0; MindSpore's scheduler) listens on the master address and
port; every other replica connects to it and says who it is and what world it
sees. The master checks that the world is complete (every rank 1..N-1 once;
MindSpore: MS_WORKER_NUM workers and MS_SERVER_NUM servers, distinct node ids)
and that everyone agrees on its size, then answers each with the verdict.
Each replica prints ``rendezvous ok: ...`` and exits 0, or says what is wrong
and exits 1.

Then (for the tests of failures): ``--then hang`` makes a replica wait for a
signal instead of exiting, and ``--exit ID CODE`` makes replica ID (a rank, or
the end of MindSpore's node id such as ``worker-1``) exit with CODE instead.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import Any

TIMEOUT = 30.0


def identity() -> dict[str, Any]:
    env = os.environ
    if "MS_ROLE" in env:
        return {
            "style": "mindspore",
            "id": env["MS_NODE_ID"],
            "role": env["MS_ROLE"],
            "master": env["MS_ROLE"] == "MS_SCHED",
            "addr": env["MS_SCHED_HOST"],
            "port": int(env["MS_SCHED_PORT"]),
            "workers": int(env["MS_WORKER_NUM"]),
            "servers": int(env["MS_SERVER_NUM"]),
        }
    if "TF_CONFIG" in env:
        config = json.loads(env["TF_CONFIG"])
        tasks = [
            (t, i, address)
            for t in ("chief", "worker", "ps")
            for i, address in enumerate(config["cluster"].get(t, []))
        ]
        task = config["task"]
        rank = [(t, i) for t, i, _ in tasks].index((task["type"], task["index"]))
        addr, port = tasks[0][2].rsplit(":", 1)
        return {
            "style": "torch",
            "id": str(rank),
            "rank": rank,
            "master": rank == 0,
            "addr": addr,
            "port": int(port),
            "world": len(tasks),
        }
    rank = int(env["RANK"])
    return {
        "style": "torch",
        "id": str(rank),
        "rank": rank,
        "master": rank == 0,
        "addr": env["MASTER_ADDR"],
        "port": int(env["MASTER_PORT"]),
        "world": int(env["WORLD_SIZE"]),
    }


def expected_peers(me: dict[str, Any]) -> int:
    if me["style"] == "mindspore":
        return int(me["workers"]) + int(me["servers"])
    return int(me["world"]) - 1


def check_world(me: dict[str, Any], peers: list[dict[str, Any]]) -> str | None:
    """What is wrong with the world the master sees, or None."""
    if me["style"] == "mindspore":
        keys = ("workers", "servers", "port")
        roles = [p["role"] for p in peers]
        if roles.count("MS_WORKER") != me["workers"] or roles.count("MS_PSERVER") != me["servers"]:
            return f"roles {sorted(roles)} do not match {me['workers']} workers, {me['servers']} PS"
        ids = [p["id"] for p in peers] + [me["id"]]
        if len(set(ids)) != len(ids):
            return f"node ids repeat: {ids}"
    else:
        keys = ("world", "port")
        ranks = sorted(int(p["rank"]) for p in peers)
        if ranks != list(range(1, int(me["world"]))):
            return f"ranks {ranks} are not 1..{me['world']}-1 once each"
    for p in peers:
        for k in keys:
            if p[k] != me[k]:
                return f"replica {p['id']} sees {k}={p[k]}, the master {k}={me[k]}"
    return None


def send(conn: socket.socket, obj: Any) -> None:
    conn.sendall(json.dumps(obj).encode() + b"\n")


def receive(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        data += chunk
    return dict(json.loads(data))


def serve(me: dict[str, Any]) -> str:
    n = expected_peers(me)
    with socket.create_server((str(me["addr"]), int(me["port"]))) as server:
        server.settimeout(TIMEOUT)
        conns = []
        peers = []
        while len(conns) < n:
            conn, _ = server.accept()
            conn.settimeout(TIMEOUT)
            peers.append(receive(conn))
            conns.append(conn)
        problem = check_world(me, peers)
        verdict = problem or f"{n + 1} replicas agree"
        for conn in conns:
            send(conn, {"ok": problem is None, "verdict": verdict})
            conn.close()
    if problem:
        raise SystemExit(f"rendezvous failed: {problem}")
    return verdict


def join(me: dict[str, Any]) -> str:
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            conn = socket.create_connection((str(me["addr"]), int(me["port"])), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                where = f"{me['addr']}:{me['port']}"
                raise SystemExit(f"rendezvous failed: nobody listens on {where}") from None
            time.sleep(0.1)
    with conn:
        conn.settimeout(TIMEOUT)
        send(conn, me)
        answer = receive(conn)
    if not answer["ok"]:
        raise SystemExit(f"rendezvous failed: {answer['verdict']}")
    return str(answer["verdict"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--then", choices=("exit", "hang"), default="exit")
    parser.add_argument("--exit", nargs=2, action="append", default=[], metavar=("ID", "CODE"))
    args, unknown = parser.parse_known_args()  # DeepSpeed adds --local_rank=N
    me = identity()
    local_rank = os.environ.get("LOCAL_RANK")
    for arg in unknown:
        if arg.startswith("--local_rank="):
            local_rank = arg.split("=", 1)[1]
    print(
        f"replica {me['id']} pid {os.getpid()}: master {me['addr']}:{me['port']}"
        + (f", local rank {local_rank}" if local_rank is not None else ""),
        flush=True,
    )
    verdict = serve(me) if me["master"] else join(me)
    print(f"rendezvous ok: {verdict}", flush=True)
    for ident, code in args.exit:
        if str(me["id"]) == ident or str(me["id"]).endswith("-" + ident):
            print(f"exiting with {code} as asked", flush=True)
            return int(code)
    if args.then == "hang":
        print("waiting for a signal", flush=True)
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
