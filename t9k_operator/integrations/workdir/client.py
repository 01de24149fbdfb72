"""The workdir's part of the clients: what ``t9k create --workdir``, the SDK's
``workdir=`` and ``train`` and the local run need of it, offered to them by
this folder (:mod:`t9k_operator.client_parts`) rather than imported: the
directory packed and checked (``pack.py``), the annotation that names its
ConfigMap and the ConfigMap itself (``build.py``), and the path the replicas
find it at.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from t9k_operator.integrations.workdir import build
from t9k_operator.integrations.workdir import pack as packing
from t9k_operator.objects import Obj


class WorkdirPart:
    """The workdir as the clients use it (``t9k_operator/sdk/workdirs.py`` states
    what they expect of it)."""

    annotation = build.ANNOTATION
    mount_path = build.MOUNT_PATH
    limit = packing.LIMIT
    error: type[ValueError] = packing.WorkdirError

    @staticmethod
    def pack(
        directory: str | os.PathLike[str] | None, extra: Mapping[str, bytes] | None = None
    ) -> packing.Packed:
        return packing.pack(directory, extra)

    @staticmethod
    def check_size(packed: packing.Packed, limit: int = packing.LIMIT) -> None:
        packing.check_size(packed, limit)

    @staticmethod
    def unpack(packed: packing.Packed, into: str | os.PathLike[str]) -> None:
        packing.unpack(packed, into)

    @staticmethod
    def config_map_name(job_name: str) -> str:
        return build.config_map_name(job_name)

    @staticmethod
    def config_map(job: Obj, archive: bytes) -> Obj:
        return build.config_map(job, archive)


PARTS: Mapping[str, Any] = {"workdir": WorkdirPart()}
