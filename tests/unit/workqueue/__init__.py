"""Tests of the work queue's layers (t9k_operator.runtime.workqueue and the
modules beside it): client-go workqueue semantics and metrics."""
