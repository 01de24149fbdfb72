"""Benchmark: informer store memory per cached pod.

Creates N labelled pods (default 5,000) shaped like training replicas (env,
volumes, resources, ownerReference) on the local cluster's KWOK nodes, waits
until KWOK reports them Running, then fills four caches from the same list
and measures with tracemalloc what each retains:

* ``operator``: the operator's informer store: each pod decoded on its own,
  as a watch event is, through the pod informers' transform ``compact_pod_for_cache``
  (managedFields dropped, field names and short strings shared)
* ``raw``: JSON dicts from one decode of the whole list, managedFields stripped
* ``raw+managedFields``: the same without stripping
* ``typed``: the ``kubernetes`` package's generated ``V1Pod`` models, for
  comparison with a cache built the usual Python way

Prints bytes per pod and the ratios. Run: ``make bench-memory`` (or
``.venv/bin/python -m hack.bench.store_memory --pods 5000``). Uses its own
cluster (name ``bench``) and tears it down at the end unless ``--keep``.

Its modules: ``pods`` (the pods, created and Running), ``caches`` (the four
caches and their figures) and ``cli``.
"""
