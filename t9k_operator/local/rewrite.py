"""This machine's names, ports and paths for the cluster's (pure).

Every replica's DNS name (``<job>-<type>-<i>.<job>``, with or without
``.<namespace>[.svc[.cluster.local]]``) and a Service's name (the headless
``<job>``, the MSJob scheduler's) become 127.0.0.1; every port the job's
Services publish for training becomes one free port of this machine, the same
for every replica; and the mount paths of files the runner writes (the
hostfile) point into the run's directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from t9k_operator.kinds.local import LOOPBACK


@dataclass
class Rewriter:
    """Turns the cluster's names, ports and mount paths into this machine's.

    ``hosts`` (the pods' ``<pod>.<job>``) are replaced wherever they stand as a
    host name; ``services`` (the Services' bare names, which could also be a
    word of a path) only when a namespace suffix or a ``:port`` follows."""

    hosts: list[str]
    namespace: str
    ports: dict[int, int]
    services: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    _host_re: re.Pattern[str] | None = None

    def _hosts(self) -> re.Pattern[str]:
        if self._host_re is None:
            ns = re.escape(self.namespace)
            suffix = rf"\.{ns}(?:\.svc(?:\.cluster\.local)?)?"
            end = r"(?![\w-]|\.[\w-])"  # the name ends here: no other domain follows

            def names(items: list[str]) -> str:
                return "|".join(re.escape(h) for h in sorted(items, key=len, reverse=True))

            alternatives = []
            if self.hosts:
                alternatives.append(rf"(?:{names(self.hosts)})(?:{suffix})?{end}")
            if self.services:
                alternatives.append(rf"(?:{names(self.services)})(?:{suffix}{end}|(?=:\d))")
            pattern = "|".join(alternatives) or r"(?!x)x"
            self._host_re = re.compile(rf"(?<![\w.-])(?:{pattern})")
        return self._host_re

    def port(self, port: int) -> int:
        return self.ports.get(port, port)

    def text(self, value: str) -> str:
        out = self._hosts().sub(LOOPBACK, value)
        if self.ports:
            out = re.sub(
                rf"(?<=\b{re.escape(LOOPBACK)}:)(\d+)\b",
                lambda m: str(self.port(int(m.group(1)))),
                out,
            )
            out = re.sub(
                r"^(--?master[_-]port=)(\d+)$",
                lambda m: m.group(1) + str(self.port(int(m.group(2)))),
                out,
            )
        for mount, local in sorted(self.paths.items(), key=lambda kv: -len(kv[0])):
            out = re.sub(rf"(?<![\w.-]){re.escape(mount)}(?=$|[/\s:;,'\"])", local, out)
        return out

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for name, value in env.items():
            if name.endswith("PORT") and value.isdigit():
                out[name] = str(self.port(int(value)))
            else:
                out[name] = self.text(value)
        return out
