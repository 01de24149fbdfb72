"""Unit tests for t9k_operator.informers.transform, through a reflector."""

from __future__ import annotations

import json
from typing import cast

from t9k_operator.objects import Obj

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
