"""The progress plugin's impure half: the HTTPS endpoint the replicas report
to (``endpoint``), the store it fills (``store``) and its wiring into the
operator (``plugin``: the progress integration with its server).

The pure half, which a reconcile asks, is
``reconcilers/integrations/progress.py``; it reads what the endpoint received
through the caches it observes (``Caches.source``), never from here.
"""
