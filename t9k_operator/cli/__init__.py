"""The ``t9k`` command: submit, create, list, describe, wait, logs, pause,
resume, delete, top, tensorboard and completion, for every job kind.

Built on the SDK (``t9k_operator.sdk``), which it alone may use to reach the
cluster: never ``kube`` directly, never ``kubernetes``, never the operator's
runtime or reconcilers. ``main`` is the console script's entry point.
"""

from t9k_operator.cli.commands import main

__all__ = ["main"]
