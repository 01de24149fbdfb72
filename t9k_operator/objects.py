"""Kubernetes objects as the operator handles them: JSON-shaped dicts, exactly
what the API server sends (camelCase keys), never client-library models."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
"""One object (or any JSON object inside one)."""
ObjList = list[Obj]
"""Objects, as a list returns them."""
