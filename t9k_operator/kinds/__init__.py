"""The job kinds: their contract and vocabulary, one module per kind, how a pod
reads as a replica's state (``pods``), what ``t9k run --local`` needs of a
kind (``local``), the GPUs pods ask for (``gpus``) and what those do, read
from NVIDIA's DCGM exporter through Prometheus (``gpu_usage``), and the
registry that lists them.

Pure: may import ``builders``, ``api``, ``resources`` and ``objects``; never the
engine, the integrations, the apply step or any runtime plumbing.
"""
