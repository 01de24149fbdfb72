"""``t9k tensorboard NAME``: a job's TensorBoard on this machine, through the API server."""

from __future__ import annotations

import argparse
import sys

from t9k_operator.cli.common import client_for
from t9k_operator.sdk import Client, views


def open_tensorboard(client: Client, name: str, address: str, port: int) -> int:
    """Forward ``address:port`` to the TensorBoard's pod, print its URL, serve until Ctrl-C."""
    _, forwarder = client.tensorboard_forward(name, address=address, port=port)
    tb = client.tensorboard(name)
    forwarder.check()
    state = views.reason_of_tensorboard(tb)
    if state != "Ready":
        print(f"warning: TensorBoard {name} is not ready yet ({state})", file=sys.stderr)
    forwarder.on_error = lambda message: print(f"error: {message}", file=sys.stderr)
    print(f"TensorBoard {name}: {forwarder.url}", flush=True)
    print("Forwarding through the API server; Ctrl-C to stop.", file=sys.stderr, flush=True)
    try:
        forwarder.serve_forever()
    finally:
        forwarder.close()
    return 0


def tensorboard_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name", metavar="NAME", help="the job (or TensorBoard) whose TensorBoard to open"
    )
    p.add_argument(
        "--port", type=int, default=6006, help="local port (default 6006; 0: any free one)"
    )
    p.add_argument("--address", default="127.0.0.1", help="local address to listen on")


def cmd_tensorboard(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        return open_tensorboard(client, args.name, args.address, args.port)
