"""The apply step: the one impure part of a job's reconcile. Per job kind, a
reconciler reads the caches, plans once, and writes children and status.

May import everything below it (the integrations, the engine, the kinds, the
runtime, the informers, the client); nothing imports it but ``reconcilers``
and the plugins' own controllers and servers beside it.
"""
