"""Every integration's part of a job's status, listed once
(:class:`~t9k_operator.api.parts.StatusPart`).

The CRD generator merges each part's schema into every job kind's status,
and ``t9k describe`` shows each under its section; the integration that
owns a part writes its field. A part of another distribution is listed
after the built-ins by its entry point in the group
:data:`t9k_operator.entry_points.STATUS_PARTS`.
"""

from __future__ import annotations

from t9k_operator import entry_points
from t9k_operator.api.parts import StatusPart
from t9k_operator.builders.gang import POD_GROUP_PART
from t9k_operator.builders.kueue import WORKLOAD_PART
from t9k_operator.builders.start_estimate import START_ESTIMATE_PART

PARTS: tuple[StatusPart, ...] = (POD_GROUP_PART, WORKLOAD_PART, START_ESTIMATE_PART)
# Then the parts of other distributions: each entry point of the group
# t9k_operator.status_parts names a StatusPart.
PARTS += entry_points.plugins(
    entry_points.STATUS_PARTS, PARTS, make=lambda part: part, names=lambda part: (part.key,)
)
