"""Every write of every controller goes through the pipeline's one writer: no
module of ``t9k_operator/integrations`` calls the API client's write verbs
itself (the progress endpoint's TokenReview is a review asked for, not state
written)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
INTEGRATIONS = ROOT / "t9k_operator" / "integrations"
WRITES = {"create", "patch", "replace", "replace_status", "update", "delete", "apply"}
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
ALLOWED = {("create", "TOKENREVIEWS")}
"""(verb, first argument) of the calls allowed: a TokenReview (the progress
endpoint's) asks the API server a question, and stores nothing."""


def _receiver(node: ast.expr) -> str:
    """``self.client`` -> "client", ``ctx.client`` -> "client", ``kube`` -> "kube"."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def direct_writes(source: str) -> list[tuple[int, str, str]]:
    """(line, verb, first argument) of each call of a client's write verb: a
    receiver named ``client`` or ``kube`` (``self.client``, ``ctx.client``),
    or its raw ``request`` with a method that writes."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = _receiver(node.func.value).lower()
        if not (receiver.endswith("client") or receiver == "kube"):
            continue
        verb, args = node.func.attr, node.args
        first = ast.unparse(args[0]) if args else ""
        raw_write = (
            verb == "request"
            and bool(args)
            and isinstance(args[0], ast.Constant)
            and str(args[0].value).upper() in WRITE_METHODS
        )
        if verb in WRITES or raw_write:
            found.append((node.lineno, verb, first))
    return sorted(found)


def test_no_integration_writes_with_the_client_itself() -> None:
    found = [
        f"{path.relative_to(INTEGRATIONS)}:{line}: {verb}({first}, ...)"
        for path in sorted(INTEGRATIONS.rglob("*.py"))
        for line, verb, first in direct_writes(path.read_text())
        if (verb, first) not in ALLOWED
    ]
    assert found == [], "write through the pipeline's Writer and StatusWriter"


def test_the_scan_sees_a_direct_write() -> None:
    source = (
        "def f(self, ctx, tb, client):\n"
        "    self.client.create(PODS, pod, tb.namespace, field_validation='Strict')\n"
        "    ctx.client.delete(PODS, 'p', 'ns', uid='u')\n"
        "    self.client.replace_status(TENSORBOARDS, tb)\n"
        "    client.request('PATCH', '/api/v1/x')\n"
        "    client.request('GET', '/api/v1/x')\n"
        "    self.client.get(PODS, 'p', 'ns')\n"
        "    self.store.replace(estimates)\n"
        "    labels.update(more)\n"
    )
    assert direct_writes(source) == [
        (2, "create", "PODS"),
        (3, "delete", "PODS"),
        (4, "replace_status", "TENSORBOARDS"),
        (5, "request", "'PATCH'"),
    ]
