"""The four caches of the same pods, what each retains (tracemalloc), and
the figures printed."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from t9k_operator.informers import Indexer, strip_managed_fields, transform_for
from t9k_operator.resources import PODS


def retained(build: Any) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cache = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, cache


def raw_store(raw_json: bytes, strip: bool) -> Indexer:
    pods = json.loads(raw_json)["items"]
    store = Indexer()
    for pod in pods:
        store.add(strip_managed_fields(pod) if strip else pod)
    return store


def operator_store(raw_json: bytes) -> Indexer:
    # what the informer holds: each pod decoded on its own, as a watch
    # event is, then the transform of the operator's pod informers
    texts = [json.dumps(p) for p in json.loads(raw_json)["items"]]
    store = Indexer()
    for text in texts:
        store.add(transform_for(PODS)(json.loads(text)))
    return store


def typed_cache(raw_json: bytes) -> dict[str, Any]:
    from kubernetes.client import ApiClient  # the generated models

    api = ApiClient()
    try:  # kubernetes >= 32: (text, type, content_type)
        pod_list = api.deserialize(raw_json.decode(), "V1PodList", "application/json")
    except TypeError:  # older clients take a response object

        class _Resp:
            data = raw_json

        pod_list = api.deserialize(_Resp(), "V1PodList")
    return {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pod_list.items}


def measure(raw_json: bytes, count: int) -> None:
    """Each cache of the ``count`` pods in ``raw_json`` (a list's body), and
    its bytes per pod and ratios, printed."""
    compact, _ = retained(lambda: operator_store(raw_json))
    raw, _ = retained(lambda: raw_store(raw_json, True))
    unstripped, _ = retained(lambda: raw_store(raw_json, False))
    typed, _ = retained(lambda: typed_cache(raw_json))
    print(f"pods cached:                      {count}")
    print(f"average JSON size per pod:        {len(raw_json) / count:,.0f} bytes")
    print(
        f"operator's store (each pod decoded alone, compact_pod_for_cache): "
        f"{compact / count:,.0f} bytes/pod ({compact / 2**20:.1f} MiB)  ratio to raw "
        f"{compact / raw:.2f}x"
    )
    print(
        f"raw store (managedFields dropped): {raw / count:,.0f} bytes/pod ({raw / 2**20:.1f} MiB)"
    )
    print(
        f"raw store with managedFields:      {unstripped / count:,.0f} bytes/pod "
        f"({unstripped / 2**20:.1f} MiB)  ratio {unstripped / raw:.2f}x"
    )
    print(
        f"kubernetes V1Pod models:           {typed / count:,.0f} bytes/pod "
        f"({typed / 2**20:.1f} MiB)  ratio {typed / raw:.2f}x"
    )
