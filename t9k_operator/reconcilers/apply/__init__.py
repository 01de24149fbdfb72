"""The apply step: the one impure part of the reconcilers. Per job kind, a
reconciler reads the caches, plans once, and writes children and status; and
the TensorBoard's own controller.

May import everything below it (the integrations, the engine, the kinds, the
runtime, the informers, the client); nothing imports it but ``reconcilers``.
"""
