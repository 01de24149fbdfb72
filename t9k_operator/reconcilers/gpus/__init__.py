"""The idle-GPU plugin's impure half: the watch that asks Prometheus about the
GPUs of Running jobs (``watch``: its verdicts, its gauge and counter) and its
wiring into the operator (``plugin``: the gpu-usage integration with its
server).

The pure half, which a reconcile asks, is
``reconcilers/integrations/gpu_usage.py``; it reads the verdicts through the
caches it observes (``Caches.source``), never from here.
"""
