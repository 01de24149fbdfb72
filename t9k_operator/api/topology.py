"""Kueue's topology annotations of a pod template, and their rules.

A replica template asks Kueue to place its pods close together in the
network (``t9k_operator/integrations/kueue/topology.py``) with the
annotations Kueue's own job integrations read. They are checked here, with
Kueue's rules, so that a mistake fails the job at once naming the annotation,
instead of a Workload the API server or Kueue refuses later:

* at most one of ``podset-required-topology``, ``-preferred-topology`` and
  ``-unconstrained-topology``;
* a level (required, preferred, slice-required) is a node label's name;
* unconstrained is a boolean, slice size a whole number of at least 1;
* ``podset-slice-required-topology`` and ``podset-slice-size`` go together;
* ``podset-group-name`` is no number, goes with required or preferred, and
  not with the slice pair.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from t9k_operator.api.schema import MAX_INT32

PREFIX = "kueue.x-k8s.io/"
REQUIRED = PREFIX + "podset-required-topology"
PREFERRED = PREFIX + "podset-preferred-topology"
UNCONSTRAINED = PREFIX + "podset-unconstrained-topology"
SLICE_REQUIRED = PREFIX + "podset-slice-required-topology"
SLICE_SIZE = PREFIX + "podset-slice-size"
GROUP_NAME = PREFIX + "podset-group-name"
ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_REQUIRED, SLICE_SIZE, GROUP_NAME)

TRUE = ("1", "t", "T", "TRUE", "true", "True")
BOOLEANS = (*TRUE, "0", "f", "F", "FALSE", "false", "False")
"""What Kueue takes as a boolean (Go's strconv.ParseBool)."""

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_PREFIX = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def is_label_name(value: str) -> bool:
    """Whether ``value`` is a label's name (a qualified name: an optional DNS
    subdomain prefix and ``/``, then a name of at most 63 characters)."""
    prefix, _, name = value.rpartition("/")
    if "/" in value and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return 0 < len(name) <= 63 and _NAME.match(name) is not None


def _slice_size_error(value: str) -> str | None:
    if not value.isdigit() or int(value) > MAX_INT32:
        return "must be a whole number"
    return "must be at least 1" if int(value) < 1 else None


def topology_error(annotations: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first broken rule of a template's ``annotations``: (the annotation,
    what is wrong); None when they keep every rule (or carry none of Kueue's)."""
    placements = [k for k in (REQUIRED, PREFERRED, UNCONSTRAINED) if k in annotations]
    if len(placements) > 1:
        return placements[1], f"must not be set with {placements[0]}: at most one of the three"
    for key in (REQUIRED, PREFERRED, SLICE_REQUIRED):
        if key in annotations and not is_label_name(str(annotations[key])):
            return (
                key,
                "must be a node label's name (the topology level), such as cloud.example/rack",
            )
    if UNCONSTRAINED in annotations and str(annotations[UNCONSTRAINED]) not in BOOLEANS:
        return UNCONSTRAINED, 'must be "true" or "false"'
    if SLICE_SIZE in annotations:
        error = _slice_size_error(str(annotations[SLICE_SIZE]))
        if error:
            return SLICE_SIZE, error
    if (SLICE_REQUIRED in annotations) != (SLICE_SIZE in annotations):
        have, missing = (
            (SLICE_REQUIRED, SLICE_SIZE)
            if SLICE_REQUIRED in annotations
            else (SLICE_SIZE, SLICE_REQUIRED)
        )
        return have, f"must be set together with {missing}"
    if GROUP_NAME in annotations:
        group = str(annotations[GROUP_NAME])
        if group.isdigit():
            return GROUP_NAME, "must not be a number"
        if SLICE_REQUIRED in annotations:
            return GROUP_NAME, f"must not be set with {SLICE_REQUIRED}"
        if REQUIRED not in annotations and PREFERRED not in annotations:
            return GROUP_NAME, f"must be set only with {REQUIRED} or {PREFERRED}"
    return None
