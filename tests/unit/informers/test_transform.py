"""Unit tests for t9k_operator.informers.transform, through a reflector."""

from __future__ import annotations

import json
from typing import cast

from t9k_operator.informers.transform import compact_for_cache, compact_pod_for_cache, transform_for
from t9k_operator.objects import Obj
from t9k_operator.resources import PODS, SERVICES

from .fakes import event, make_reflector, pod


def test_the_default_transform_shares_repeated_strings_between_cached_objects() -> None:
    """Each watch event is decoded on its own, so two pods arrive with their own
    copies of every field name and of values such as the image; the cache must
    hold one copy, or it costs a third to a half more (docs/benchmarks.md)."""

    def decoded(name: str, rv: str) -> Obj:
        # a fresh decode per event, as the watch stream does
        return cast(Obj, json.loads(json.dumps(event("ADDED", pod(name, rv, managed_fields=True)))))

    first, second = decoded("a", "11"), decoded("b", "12")
    reflector, _, handler, _ = make_reflector(lists=[([], "10")], watches=[[first, second]])
    reflector.run()
    a, b = (obj for kind, obj in handler.events if kind != "replace")
    assert a["metadata"]["name"] == "a" and b["metadata"]["name"] == "b"
    assert "managedFields" not in a["metadata"]
    key_a = next(k for k in a if k == "metadata")
    key_b = next(k for k in b if k == "metadata")
    assert key_a is key_b
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    # nothing else changes: the cached object equals the decoded one
    expected = json.loads(json.dumps(event("ADDED", pod("a", "11"))))["object"]
    assert a == expected


def test_a_cached_pod_keeps_what_its_readers_read_and_drops_the_rest() -> None:
    pod = {
        "metadata": {"name": "a-worker-0", "annotations": {"t9k/x": "1"}, "managedFields": [{}]},
        "spec": {
            "nodeName": "n1",
            "restartPolicy": "Never",
            "volumes": [{"name": "ssh", "secret": {"secretName": "a-ssh"}}],
            "initContainers": [
                {
                    "name": "ssh-setup",
                    "image": "user/image:1",
                    "command": ["sh", "-c", "set up"],
                    "env": [{"name": "T9K_IMAGE_FROM", "value": "worker"}],
                    "volumeMounts": [{"name": "ssh", "mountPath": "/ssh"}],
                },
                {"name": "sidecar", "image": "s:1", "restartPolicy": "Always", "args": ["x"]},
            ],
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch:2",
                    "command": ["torchrun"],
                    "args": ["train.py"],
                    "env": [{"name": "RANK", "value": "0"}],
                    "envFrom": [{"configMapRef": {"name": "c"}}],
                    "volumeMounts": [{"name": "ssh", "mountPath": "/ssh"}],
                    "readinessProbe": {"exec": {"command": ["true"]}},
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    "ports": [{"containerPort": 2222}],
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    assert compact_pod_for_cache(pod) == {
        "metadata": {"name": "a-worker-0", "annotations": {"t9k/x": "1"}},
        "spec": {
            "nodeName": "n1",
            "restartPolicy": "Never",
            "initContainers": [
                {
                    "name": "ssh-setup",
                    "image": "user/image:1",
                    "env": [{"name": "T9K_IMAGE_FROM", "value": "worker"}],
                },
                {"name": "sidecar", "image": "s:1", "restartPolicy": "Always"},
            ],
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch:2",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    "ports": [{"containerPort": 2222}],
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def test_the_pods_informers_cache_through_the_pod_transform_and_the_others_not() -> None:
    assert transform_for(PODS) is compact_pod_for_cache
    assert transform_for(SERVICES) is compact_for_cache
