"""Helpers the work queue tests share."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

JOIN = 5.0  # generous bound for thread joins; tests normally finish in milliseconds


def unique(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def start(target: Callable[[], Any]) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t
