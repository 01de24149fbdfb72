"""Integrations: what a job gets beyond its own children (gang scheduling,
Kueue, its TensorBoard, its progress, its start estimate), each one module of
one contract, listed in one registry.

Pure: may import the engine, the kinds, ``builders``, ``api``, ``resources`` and
``objects``; never the apply step, the client, the informers or the runtime.
"""
