"""The project's development scripts: the local cluster (:mod:`hack.cluster`),
the generators, the benchmarks and the demo.

A package, so that its scripts import each other as ``hack.<name>``: run
from the repository root, ``python3 -m hack.<name>`` (the Makefile's way).
"""
