"""The start estimates' impure half: the thread that reads what an estimate
needs every period (``poller``: the nodes and bound pods; ``queues``: Kueue's
visibility API and queues) and its wiring into the operator (``plugin``).

The pure half, which a reconcile asks and which does the arithmetic, is
``reconcilers/integrations/start_estimate.py`` (with ``start_inputs`` and
``start_math``); it reads the estimates back through ``Caches.source``.
"""
