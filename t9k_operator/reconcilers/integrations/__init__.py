"""Integrations: what a job gets beyond its own children (gang scheduling,
Kueue, its TensorBoard, its progress, its start estimate), each one module of
one contract, listed in one registry.

Each implements the pipeline's contract (``reconcilers/pipeline/contract.py``),
which the pipeline reads them through: nothing of the pipeline imports them.

Pure: may import the pipeline's contract and plan, the engine, the kinds,
``builders``, ``api``, ``resources`` and ``objects``; never the pipeline's
apply step, the client, the informers or the runtime.
"""
