"""Reconcilers: the pure engine (``engine``), over the job kinds
(``t9k_operator.kinds``), the reconcile pipeline (``pipeline``: the
integration contract, the plan and the apply step), the hooks through which
integrations add servers and controllers (``serving``), and the controllers
the manager runs (``controllers``: :func:`~.controllers.build_controllers`).

The integrations themselves are folders of ``t9k_operator/integrations``,
listed in ``t9k_operator/registry.py``; nothing here imports them. This
package's face imports nothing, so a reader of the contract (``t9k``
describing a job's status parts) does not load the controllers.
"""
