"""The memory the operator's informer stores hold for a run's objects,
measured apart from the operator. Run as ``python -m
hack.bench.job_start.stores FILE`` it is :func:`cache_bytes`'s fresh
process."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc

from hack.bench.common.procstat import proc_kib
from hack.cluster.handle import ROOT
from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.informers import Indexer, transform_for
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, PODS, SECRETS, SERVICES

from ..common.jobs import JOBS

# What the operator's informers store of a run: its jobs, then the children its label selects.
STORED = (JOBS, PODS, SERVICES, CONFIGMAPS, SECRETS)


def build_stores(raw: list[list[str]]) -> list[Indexer]:
    """An informer store per list of JSON texts (of STORED's resources, in
    order), each text decoded on its own (as a watch event is) and passed
    through the transform the operator's informers of its resource use."""
    stores = []
    for resource, texts in zip(STORED, raw, strict=True):
        transform = transform_for(resource)
        store = Indexer()
        for text in texts:
            store.add(transform(json.loads(text)))
        stores.append(store)
    return stores


def cache_bytes(client: KubeClient) -> tuple[int, int]:
    """The memory the operator's informer stores retain for what it caches now:
    the same objects (its jobs, and the children its label selects), listed
    from the server, each decoded on its own (as a watch event is) and passed
    through the informers' default transform into the same store type.
    Measured twice, not estimated from a per-pod figure (the bench's pods are
    not the pods of ``make bench-memory``): the bytes Python asked for
    (tracemalloc, in this process), and the resident memory the stores add to
    a fresh process (``VmRSS`` before and after, in a child), the unit the
    operator's peak RSS is in: it counts what the allocator holds for those
    objects (its size classes, its pools), which tracemalloc does not."""
    payloads = [
        client.request("GET", JOBS.path(None)),
        *(
            client.request("GET", r.path(None), query={"labelSelector": CHILD_SELECTOR})
            for r in STORED[1:]
        ),
    ]
    raw = [[json.dumps(obj) for obj in p["items"]] for p in payloads]
    del payloads
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    stores = build_stores(raw)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del stores
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(raw, f)
        f.flush()
        child = subprocess.run(
            [sys.executable, "-m", "hack.bench.job_start.stores", f.name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    return size, int(child.stdout.split()[-1])


def main(path: str) -> int:
    """Build the informer stores from the JSON texts in
    FILE (a list per store) in this fresh process and print the resident
    bytes they added."""
    with open(path) as f:
        raw = json.load(f)
    gc.collect()
    before = proc_kib(os.getpid(), "VmRSS")
    stores = build_stores(raw)
    gc.collect()
    added = proc_kib(os.getpid(), "VmRSS") - before
    del stores  # held until here: their pages are the figure
    print(added * 1024)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
