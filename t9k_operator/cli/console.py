"""``t9k console``: the web console's flags; its body is
:mod:`t9k_operator.console`, imported only when the command runs (the rest of
``t9k`` never loads the web server)."""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit


def console_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port to listen on (default: 8890, or any free port when it is taken)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="the address to listen on (default: 127.0.0.1, this machine only; "
        "0.0.0.0 with --in-cluster)",
    )
    p.add_argument("--no-browser", action="store_true", help="print the URL, do not open it")
    p.add_argument(
        "--secure-cookie",
        action="store_true",
        help="mark the session cookie Secure (behind a proxy that serves https)",
    )
    p.add_argument(
        "--prometheus-url",
        # the variable t9k top and t9k describe read (integrations/gpu_usage/sdk.py)
        default=os.environ.get("T9K_PROMETHEUS_URL") or None,
        help="a Prometheus that scrapes the operator and NVIDIA's DCGM exporter "
        "(http://host:9090): the Job page charts steps and GPU utilization over the "
        "job's life (default $T9K_PROMETHEUS_URL)",
    )

    cluster = p.add_argument_group(
        "in-cluster",
        "the console for everyone, in a pod behind a Service: each person signs in "
        "with their own token and acts with it only (docs/console.md)",
    )
    cluster.add_argument(
        "--in-cluster",
        action="store_true",
        help="serve people who sign in with their own token; no kubeconfig is read",
    )
    cluster.add_argument(
        "--api-server",
        default=None,
        help="the API server's URL (default: the pod's KUBERNETES_SERVICE_HOST and _PORT)",
    )
    cluster.add_argument(
        "--ca-file",
        default=None,
        help="the CA that signs the API server's certificate "
        "(default: the pod's service account's ca.crt)",
    )
    cluster.add_argument(
        "--session-hours",
        type=float,
        default=8.0,
        help="a session ends after this long at most, or when its token expires (default: 8)",
    )


def cmd_console(args: argparse.Namespace) -> int:
    from t9k_operator.console.serve import run

    if args.prometheus_url and urlsplit(args.prometheus_url).scheme not in ("http", "https"):
        raise SystemExit("t9k console: --prometheus-url must be an http:// or https:// address")

    return run(args)
