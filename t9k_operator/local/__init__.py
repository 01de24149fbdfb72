"""Local run: a job's replicas as processes on this machine (``t9k run --local FILE``).

The manifest is parsed by the kind's API model and its pods built by the
kind's own builders (as the operator does), then each replica's training
container runs as a local process with the command, arguments and
environment its pod would have (:mod:`.kubelet`), addresses rewritten to
127.0.0.1 and free ports (:mod:`.rewrite`); what stands for each replica is
the kind's ``local`` hook's to say (:mod:`t9k_operator.kinds.local`), and
:mod:`.plan` puts it together; :mod:`.runner` runs them, prefixes their output,
and ends the job by the kind's own success rule. docs/local-run.md is the
user's guide.

Entry points: :func:`add_arguments` and :func:`main` for the ``t9k`` CLI,
:func:`run` for the SDK, and ``python -m t9k_operator.local FILE`` meanwhile.

May import ``api``, ``builders``, ``objects`` and the pure
``kinds`` (the kinds' views, success rules and local hooks); never the client,
the informers, the runtime, the foundation or the reconcile pipeline.
"""

from t9k_operator.local.cli import add_arguments, main, run
from t9k_operator.local.plan import LocalJob, LocalRunError, Process, plan

__all__ = ["LocalJob", "LocalRunError", "Process", "add_arguments", "main", "plan", "run"]
