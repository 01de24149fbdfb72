"""Kubernetes objects as the operator handles them: JSON-shaped dicts, exactly
what the API server sends (camelCase keys), never client-library models."""

from __future__ import annotations

import hashlib
from typing import Any

Obj = dict[str, Any]
"""One object (or any JSON object inside one)."""
ObjList = list[Obj]
"""Objects, as a list returns them."""


def digest(text: str) -> bytes:
    """A 16-byte fingerprint of ``text``, kept in place of the text where only
    equality matters (the last status written, an Event's correlation keys):
    a few dozen bytes per job instead of the text (docs/benchmarks.md, "Memory")."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()
