"""Pydantic models of every CRD (spec and status); manifests/crds is generated from them.
May import only pydantic, the standard library and ``t9k_operator.objects``.

One module per kind (``pytorch``, ``deepspeed``, ``colossalai``, ``msjob``,
``tensorboard``) declares its spec, status, object model and ``CRD``, and
names the parts of its spec that live in modules of their own
(``deepspeed_config`` and ``deepspeed_worker``; ``colossalai_replicas``;
``msjob_run_policy`` and ``msjob_status``); what the kinds share is split by
role:

* ``base``: :class:`~t9k_operator.api.base.T9kModel`, the base of every model;
* ``rules``: :class:`~t9k_operator.api.rules.Rule`, an invariant stated once:
  the CEL rule the CRD carries and the Python check the model runs;
* ``schema``: schema markers, limits and bounded types the CRD generator reads;
* ``template``: pod templates (shape checks, their CRD schema);
* ``specs``: the spec parts the T9k job kinds share (run policy, scheduler,
  run modes), and ``elastic``: elastic training;
* ``replica_specs``: the fields and rules of a ``spec.replicaSpecs`` list of
  typed entries (PyTorch, TensorFlow, XGBoost, GenericJob);
* ``status``: the job status the operator writes;
* ``crd``: the object model, the CRD descriptor and the rules on names.
"""
