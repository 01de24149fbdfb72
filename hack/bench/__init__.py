"""The benchmarks, a package each, run from the repository root as
``python -m hack.bench.<name>``: ``job_start`` (how fast the operator starts
jobs), ``progress`` (its progress endpoint under many reporters),
``progress_beside`` (its reconciles beside 10,000 reporting ranks) and
``store_memory`` (its informer store's memory per pod); what they share is in
``common``. docs/benchmarks.md gives their figures and how they were taken."""
