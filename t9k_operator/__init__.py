"""t9k-operator: a Kubernetes operator for distributed training jobs.

Runs ``PyTorchTrainingJob``, ``DeepSpeedJob`` and ``ColossalAIJob``
(``batch.tensorstack.dev/v1beta1``) and ``MSJob`` (``mindspore.gitee.com/v1``).

The package is layered (enforced by import-linter, see pyproject.toml)::

    __main__ -> manager -> reconcilers -> builders -> api

and the runtime plumbing (``kube``, ``informers``, ``workqueue``, ``events``,
``leaderelection``) knows nothing about job kinds.
"""

__version__ = "0.1.0"
