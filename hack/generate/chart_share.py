"""The chart's CRDs stored with their repeated subtrees once: a release keeps
its chart and its rendered manifest in a Secret of at most 1 MiB, which a copy
of the pod template's schema per job kind would exceed. The CRDs' template
(:data:`hack.generate.chart_text.CRDS_TEMPLATE`) puts them back."""

from __future__ import annotations

import json
from typing import Any

SHARE_MIN = 2000
"""Smallest subtree (bytes of JSON) the chart stores once when repeated."""
SHARED_MARK = "$t9k-shared"


def _serial(node: Any, memo: dict[int, str]) -> str:
    if isinstance(node, dict):
        text = (
            "{"
            + ",".join(f"{json.dumps(k)}:{_serial(v, memo)}" for k, v in sorted(node.items()))
            + "}"
        )
    elif isinstance(node, list):
        text = "[" + ",".join(_serial(v, memo) for v in node) + "]"
    else:
        return json.dumps(node)
    memo[id(node)] = text
    return text


def _repeats(
    node: Any, memo: dict[int, str], seen: dict[str, list[tuple[dict[str, Any], str]]]
) -> None:
    """Record in ``seen`` each subtree of SHARE_MIN bytes or more under a mapping
    key (and not already shared), by its JSON text (``memo``)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (dict, list)):
                text = memo[id(v)]
                if len(text) >= SHARE_MIN and SHARED_MARK not in v:
                    seen.setdefault(text, []).append((node, k))
                _repeats(v, memo, seen)
    elif isinstance(node, list):
        for v in node:
            _repeats(v, memo, seen)


def share_subtrees(docs: dict[str, Any]) -> dict[str, Any]:
    """``docs`` (file name -> CRD, changed in place) with every subtree under a
    mapping key that occurs more than once replaced by ``{}``, and what puts
    them back: ``trees`` (id -> subtree), ``refs`` (a doc's file name or a
    tree's id -> [{path, id}]), ``order`` (trees, each after those it holds)
    and ``files``. The largest repeated subtree goes first, until none of
    SHARE_MIN bytes repeats."""
    trees: dict[str, Any] = {}
    marker = SHARED_MARK
    while True:
        memo: dict[int, str] = {}
        seen: dict[str, list[tuple[dict[str, Any], str]]] = {}

        for root in [*docs.values(), *trees.values()]:
            _serial(root, memo)
            _repeats(root, memo, seen)
        repeated = [t for t, where in seen.items() if len(where) > 1]
        if not repeated:
            break
        text = max(repeated, key=len)
        tid = f"t{len(trees)}"
        trees[tid] = json.loads(text)
        for parent, key in seen[text]:
            parent[key] = {marker: tid}
    refs: dict[str, list[dict[str, Any]]] = {}

    def collect(owner: str, node: Any, path: list[Any]) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in list(items):
            if isinstance(v, dict) and marker in v:
                refs.setdefault(owner, []).append({"path": [*path, k], "id": v[marker]})
                node[k] = {}
            elif isinstance(v, (dict, list)):
                collect(owner, v, [*path, k])

    for owner, root in [*docs.items(), *trees.items()]:
        collect(owner, root, [])
    order: list[str] = []

    def visit(tid: str) -> None:
        if tid not in order:
            for ref in refs.get(tid, []):
                visit(ref["id"])
            order.append(tid)

    for tid in trees:
        visit(tid)
    return {"files": list(docs), "order": order, "trees": trees, "refs": refs}
