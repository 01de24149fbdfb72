"""t9k-operator: a Kubernetes operator for distributed training jobs.

Runs ``PyTorchTrainingJob``, ``DeepSpeedJob`` and ``ColossalAIJob``
(``batch.tensorstack.dev/v1beta1``) and ``MSJob`` (``mindspore.gitee.com/v1``).

The package is layered (enforced by import-linter, see pyproject.toml)::

    __main__ -> manager -> reconcilers -> builders -> api

and the plumbing below them, layered too::

    runtime -> informers -> kube -> foundation

(``runtime``: workqueue, controller, events, leader election; ``foundation``:
clock, token bucket, metrics) knows nothing about job kinds.
"""

__version__ = "0.1.0"
