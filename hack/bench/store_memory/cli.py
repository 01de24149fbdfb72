"""The bench's command line: the cluster, the pods, the caches' figures."""

from __future__ import annotations

import argparse
import contextlib
import json

import hack.bench.store_memory as package
from hack.cluster import Cluster
from t9k_operator.kube import AlreadyExists, ClientOptions, KubeClient
from t9k_operator.resources import NAMESPACES, PODS

from .caches import measure
from .pods import NAMESPACE, SELECTOR, create_running


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.bench.store_memory",
        description=(package.__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--cluster", default="bench")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args()

    cluster = Cluster(args.cluster, build=True, echo=True)
    cluster.up()
    client = KubeClient.from_config(
        str(cluster.kubeconfig), options=ClientOptions(qps=400, burst=400, pool_size=16)
    )
    try:
        with contextlib.suppress(AlreadyExists):
            client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        create_running(client, args.pods)
        payload = client.request("GET", PODS.path(NAMESPACE), query={"labelSelector": SELECTOR})
        raw_json = json.dumps(payload).encode()
        del payload
        measure(raw_json, args.pods)
    finally:
        if not args.keep:
            cluster.stop()
    return 0
