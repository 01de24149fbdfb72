"""Pydantic models of every CRD (spec and status); manifests/crds is generated from them.
May import only pydantic, the standard library and ``t9k_operator.objects``.

One module per kind (``pytorch``, ``deepspeed`` with ``deepspeed_config``,
``colossalai``, ``msjob``, ``tensorboard``) declares its spec, status, object
model and ``CRD``; what the kinds share is split by role:

* ``base``: :class:`~t9k_operator.api.base.T9kModel`, the base of every model;
* ``schema``: schema markers, limits and bounded types the CRD generator reads;
* ``template``: pod templates (shape checks, their CRD schema);
* ``specs``: the spec parts the T9k job kinds share (run policy, scheduler,
  run modes, elastic training);
* ``status``: the job status the operator writes;
* ``crd``: the object model, the CRD descriptor and the rules on names.
"""
