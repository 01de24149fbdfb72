#!/usr/bin/env python3
"""Benchmark: informer store memory per cached pod.

Creates N labelled pods (default 5,000) shaped like training replicas (env,
volumes, resources, ownerReference) on the local cluster's KWOK nodes, waits
until KWOK reports them Running, then fills four caches from the same list
and measures with tracemalloc what each retains:

* ``operator``: the operator's informer store: each pod decoded on its own,
  as a watch event is, through the pod informers' transform ``compact_pod_for_cache``
  (managedFields dropped, field names and short strings shared)
* ``raw``: JSON dicts from one decode of the whole list, managedFields stripped
* ``raw+managedFields``: the same without stripping
* ``typed``: the ``kubernetes`` package's generated ``V1Pod`` models, for
  comparison with a cache built the usual Python way

Prints bytes per pod and the ratios. Run: ``make bench-memory`` (or
``.venv/bin/python -m hack.bench_store_memory --pods 5000``). Uses its own
cluster (name ``bench``) and tears it down at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from t9k_operator.informers import Indexer, strip_managed_fields, transform_for
from t9k_operator.kube import AlreadyExists, ClientOptions, KubeClient
from t9k_operator.resources import NAMESPACES, NODES, PODS

ROOT = Path(__file__).resolve().parents[1]

NAMESPACE = "bench"
LABEL = "app.kubernetes.io/managed-by"


def training_pod(i: int, nodes: int) -> dict[str, Any]:
    job = f"job-{i // 8}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{i % 8}",
            "labels": {
                LABEL: "t9k-operator",
                "t9k.dev/job-name": job,
                "t9k.dev/job-kind": "PyTorchTrainingJob",
                "t9k.dev/replica-type": "worker",
                "t9k.dev/replica-index": str(i % 8),
            },
            "annotations": {"kwok.t9k.dev/run-duration": "24h"},
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "PyTorchTrainingJob",
                    "name": job,
                    "uid": f"00000000-0000-0000-0000-{i // 8:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": f"kwok-node-{i % nodes}",
            "hostname": f"{job}-worker-{i % 8}",
            "subdomain": job,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                    "command": ["torchrun"],
                    "args": ["--nnodes=8", "--nproc-per-node=8", "train.py", "--epochs=10"],
                    "env": [
                        {"name": "MASTER_ADDR", "value": f"{job}-master-0.{job}"},
                        {"name": "MASTER_PORT", "value": "23456"},
                        {"name": "WORLD_SIZE", "value": "8"},
                        {"name": "RANK", "value": str(i % 8)},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                    "resources": {"limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "dshm", "mountPath": "/dev/shm"},
                    ],
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            ],
        },
    }


def retained(build: Any) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, cache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--cluster", default="bench")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args()

    out = subprocess.run(
        [sys.executable, "-m", "hack.cluster", "up", "--name", args.cluster],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    kubeconfig = out.strip().splitlines()[-1]
    client = KubeClient.from_config(
        kubeconfig, options=ClientOptions(qps=400, burst=400, pool_size=16)
    )
    try:
        with contextlib.suppress(AlreadyExists):
            client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        nodes = len(client.list_all(NODES)[0])
        started = time.monotonic()

        def create(i: int) -> None:
            with contextlib.suppress(AlreadyExists):
                client.create(PODS, training_pod(i, nodes), NAMESPACE)

        with ThreadPoolExecutor(12) as pool:
            list(pool.map(create, range(args.pods)))
        print(f"created {args.pods} pods in {time.monotonic() - started:.1f}s", file=sys.stderr)
        deadline = time.monotonic() + 600
        while True:
            items, _ = client.list_all(PODS, NAMESPACE, label_selector=f"{LABEL}=t9k-operator")
            running = sum(1 for p in items if p.get("status", {}).get("phase") == "Running")
            if running >= args.pods or time.monotonic() > deadline:
                break
            time.sleep(2)
        print(
            f"{running}/{args.pods} Running after {time.monotonic() - started:.1f}s",
            file=sys.stderr,
        )
        payload = client.request(
            "GET", PODS.path(NAMESPACE), query={"labelSelector": f"{LABEL}=t9k-operator"}
        )
        raw_json = json.dumps(payload).encode()
        del payload, items
        count = args.pods

        def raw_store(strip: bool) -> Indexer:
            pods = json.loads(raw_json)["items"]
            store = Indexer()
            for pod in pods:
                store.add(strip_managed_fields(pod) if strip else pod)
            return store

        def operator_store() -> Indexer:
            # what the informer holds: each pod decoded on its own, as a watch
            # event is, then the transform of the operator's pod informers
            texts = [json.dumps(p) for p in json.loads(raw_json)["items"]]
            store = Indexer()
            for text in texts:
                store.add(transform_for(PODS)(json.loads(text)))
            return store

        def typed_cache() -> dict[str, Any]:
            from kubernetes.client import ApiClient  # the generated models

            api = ApiClient()
            try:  # kubernetes >= 32: (text, type, content_type)
                pod_list = api.deserialize(raw_json.decode(), "V1PodList", "application/json")
            except TypeError:  # older clients take a response object

                class _Resp:
                    data = raw_json

                pod_list = api.deserialize(_Resp(), "V1PodList")
            return {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pod_list.items}

        compact, _ = retained(operator_store)
        raw, _ = retained(lambda: raw_store(True))
        unstripped, _ = retained(lambda: raw_store(False))
        typed, _ = retained(typed_cache)
        print(f"pods cached:                      {count}")
        print(f"average JSON size per pod:        {len(raw_json) / count:,.0f} bytes")
        print(
            f"operator's store (each pod decoded alone, compact_pod_for_cache): "
            f"{compact / count:,.0f} bytes/pod ({compact / 2**20:.1f} MiB)  ratio to raw "
            f"{compact / raw:.2f}x"
        )
        print(
            f"raw store (managedFields dropped): {raw / count:,.0f} bytes/pod "
            f"({raw / 2**20:.1f} MiB)"
        )
        print(
            f"raw store with managedFields:      {unstripped / count:,.0f} bytes/pod "
            f"({unstripped / 2**20:.1f} MiB)  ratio {unstripped / raw:.2f}x"
        )
        print(
            f"kubernetes V1Pod models:           {typed / count:,.0f} bytes/pod "
            f"({typed / 2**20:.1f} MiB)  ratio {typed / raw:.2f}x"
        )
    finally:
        if not args.keep:
            subprocess.run(
                [sys.executable, "-m", "hack.cluster", "down", "--name", args.cluster],
                cwd=ROOT,
                check=False,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
