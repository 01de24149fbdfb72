"""Pure functions from a job (its API model) to its desired children (dicts): no I/O, no clock.
May import ``api``, ``resources`` and ``objects``; never the client, informers or runtime."""
