"""The notifications' deliverer under a burst: many jobs ending at once, one
endpoint slow (``python -m hack.bench.notifications``)."""
