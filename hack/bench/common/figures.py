"""How the benchmarks print a figure: a value or "-", a ratio, a quantile."""

from __future__ import annotations


def fmt(v: float | None, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (the sample at that rank; NaN when empty)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")
