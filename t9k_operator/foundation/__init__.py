"""Foundations every other layer uses: the clock, the token bucket, every Prometheus collector.
May import only the standard library, third-party libraries and ``t9k_operator.objects``."""
