"""The project's development scripts: the local cluster (:mod:`hack.cluster`),
the generators (:mod:`hack.generate`), the release tooling
(:mod:`hack.release`), the benchmarks and the demo; third_party/ holds the Go
wrapper modules, the pinned OpenAPI and the KWOK files the cluster builds from.

A package, so that its scripts import each other as ``hack.<name>``: run
from the repository root, ``python3 -m hack.<name>`` (the Makefile's way).
"""
