"""Foundations every other layer uses: the clock, the token bucket, every Prometheus
collector, and an instant query to a Prometheus server (``prometheus``).
May import only the standard library, third-party libraries and ``t9k_operator.objects``."""
