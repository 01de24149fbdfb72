"""The ground's helpers on JSON-shaped objects (t9k_operator.objects)."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from typing import Any

from t9k_operator.objects import copy_tree


def test_copy_tree_is_a_deep_copy_of_a_json_tree() -> None:
    tree: dict[str, Any] = {
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "args": ["x", "y"], "env": []}], "n": 3},
        "flags": [True, None, 1.5, {"deep": [[1, 2], {"k": "v"}]}],
    }
    before = json.dumps(tree)
    out = copy_tree(tree)
    assert out == tree == copy.deepcopy(tree)
    assert json.dumps(out) == before, "same keys, same order"
    # Every dict and list is new: changing the copy leaves the tree as it was.
    out["metadata"]["labels"]["b"] = "2"
    out["spec"]["containers"][0]["args"].append("z")
    out["spec"]["containers"][0]["env"].append({"name": "E"})
    out["flags"][3]["deep"][0].append(3)
    out["flags"][3]["deep"][1]["k"] = "w"
    assert json.dumps(tree) == before


def test_copy_tree_copies_mapping_subclasses_as_plain_dicts() -> None:
    tree = OrderedDict(a=[OrderedDict(b=1)])
    out = copy_tree(tree)
    assert out == {"a": [{"b": 1}]} and type(out) is dict and type(out["a"][0]) is dict
    out["a"][0]["b"] = 2
    assert tree["a"][0]["b"] == 1
