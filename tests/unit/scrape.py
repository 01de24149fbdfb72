"""Reading Prometheus series in tests: every sample of a metric, by labels."""

from __future__ import annotations

from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families


def samples(name: str, text: str | None = None) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of metric ``name`` in ``text`` (default: the registry now), by labels."""
    text = text if text is not None else generate_latest(REGISTRY).decode()
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def labels(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(kw.items()))
