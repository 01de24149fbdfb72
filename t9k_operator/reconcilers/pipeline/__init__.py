"""The reconcile pipeline: observe -> plan -> apply, the same for every job
kind and every integration, naming none of them.

Pure, its own vocabulary: ``contract`` (what an integration is, the
:class:`~.contract.Action` s a pass writes, their refusals) and ``plan``
(a job's observation, its :class:`~.plan.Problem` s, and the one ordered
list of actions a pass assembles from the engine and the integrations).
These may import the engine, the kinds, ``builders``, ``api``, ``resources``
and ``objects``; never the apply step, the client, the informers or the
runtime.

Impure, the apply step: ``job`` (the generic reconciler: caches -> one plan ->
one applier), ``applier`` (a pass's actions carried out in order),
``children`` (writes and their problems), ``writes`` (own writes and
refusals, read by the next pass) and ``lifecycle`` (figures and Events).
These may import the runtime, the informers and the client too.

Nothing here imports an integration (``t9k_operator/integrations``): the
integrations import the contract, and the operator hands the ones it turned
on to the reconciler. Nothing imports the apply step but ``reconcilers`` and
the plugins' own controllers and servers.
"""
