"""The job engine: one pure state machine shared by every job kind.

``plan(kind, job, pods, now)`` looks at a job, the pods that exist and the
time, and returns a :class:`Plan`: pods to create, pods to delete, the status
to write, Events to record and when to look again. It never does I/O and
never reads a clock, so every rule is a table-driven unit test.

Rules, in order of precedence:

1. **Finished jobs** (phase Succeeded/Failed) stay finished; only the cleanup
   policy still acts (``None`` keeps all pods, ``All`` deletes every pod,
   ``Unfinished`` deletes pods that have not ended; a kind may narrow the
   scope, as ColossalAIJob keeps its launcher), and ``ttlSecondsAfterFinished``
   (MSJob) deletes the job that long after its completion (``Plan.delete_job``).
2. **Deadline**: ``activeDeadlineSeconds`` after ``status.startTime`` the job
   fails with reason ``DeadlineExceeded``, exactly on time: until then the
   plan asks to be requeued at that instant. Paused time counts.
3. **Pause**: every pod is deleted (none created); phase Paused. The
   pass's stop gates (:class:`~.planning.StopGate`, from the integrations:
   checkpoint before a stop) are asked first, and may hold the deletes (so
   are a gate's stop and a whole-job restart); they hear first of every
   pass, last of a running job's pass (a drain coming) and last of every
   pass (a stop called off), and say what new pods resume from. Unpausing
   shows phase Resuming until every replica runs again; pods created after
   a pause use the ``resumeSpecs`` of their type.
4. **Debug**: pods run the debug command (per-kind default), optionally
   without init containers; their exits neither restart them nor end the job.
5. **Restarts**: an ended replica is recreated per its type's restart policy
   (Never / OnFailure / Always / ExitCode on 130, 137, 138, 143). Every
   recreation counts once against the job's one ``backoffLimit``; the failed
   pod's uid goes into ``status.countedFailures`` in the same status write
   that raises ``restartCount``, so a crash between the write and the delete
   neither loses nor double-counts it. At the limit nothing is recreated.
   A replica whose pod was disrupted (its ``DisruptionTarget`` condition:
   evicted, preempted, its node lost) is no failure of the training: it is
   recreated whatever the policy, counted in ``disruptionCount`` instead
   (the same once-only bookkeeping), with an Event; so is a pod that the
   last status listed as live and that is gone without the operator having
   deleted it (force-deleted); past the job's
   ``disruption_limit`` the job fails, ``TooManyDisruptions``. Both kinds
   of recreation go into ``status.restarts`` (the last ten: when, which
   replica, why, on which node, counted or not), which outlives the job.
6. **Pods that cannot start**: a pod placed on a node whose container
   kubelet cannot start (its waiting reason: ImagePullBackOff, a missing
   Secret, ...) is named in the Running condition, with one Event. A cause no
   wait cures (an image reference that cannot be parsed, a key missing from
   an existing ConfigMap or Secret) fails the job at once, reason
   ``PodCannotStart``; any other fails it once the pod has not started within
   the start timeout of its placement (``job.start_timeout``; 0: never).
7. **Outcome**: the kind decides success and failure from the replicas'
   states (PyTorch: the master's exit; DeepSpeed: worker-0; ...). A replica
   failed for good fails the job at once, with the reason.
8. **Lost nodes**: while a wanted replica's pod is on a node that is not
   Ready or is gone (``ReplicaState.lost``, which the apply step reads from
   the Node), or its phase is Unknown, the job's phase is ``Unknown``, its
   ReplicaFailure condition names the nodes and pods, with one Event; the
   next pass after they are back (or replaced) decides the phase afresh.
   Kubernetes decides when such a pod is gone (taint eviction, PodGC); the
   engine never deletes it by force.

**Gates** (``job.gates``, from the integrations and the apply step) hold a
job back without the engine knowing who set them: a gate that holds
everything (a queue that has not admitted the job, or took the admission
back) leaves the job Pending with no pods and no start time (its deadline
counts from the admission, and an eviction counts no restart); a gate that
holds new pods (a refusal being retried) creates none; a gate that holds
nothing says why the job's pods wait to run (a gang scheduler placing the
group). The integrations render their own parts of the status.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from t9k_operator.kinds.view import JobView
from t9k_operator.reconcilers.engine.conditions import TERMINAL
from t9k_operator.reconcilers.engine.creation import create_missing, scale_down
from t9k_operator.reconcilers.engine.deadlines import cannot_start, never_placed, out_of_time
from t9k_operator.reconcilers.engine.finish import decide, finished, invalid
from t9k_operator.reconcilers.engine.hang import hung
from t9k_operator.reconcilers.engine.pause import held, paused, resume
from t9k_operator.reconcilers.engine.phase import progress
from t9k_operator.reconcilers.engine.planning import Pass, Plan, Pods, Rules, StopGate
from t9k_operator.reconcilers.engine.restarts import restart_or_fail, vanished


def plan(
    kind: Rules, job: JobView, pods: Pods, now: datetime, stops: Sequence[StopGate] = ()
) -> Plan:
    """The rules of the module docstring, in order; the first that ends the pass
    wins. ``stops``: the pass's stop gates, each made for it."""
    p = Pass(kind, job, pods, now, stops)
    for gate in p.stops:
        gate.begin(p)
    if finished(p) or invalid(p) or out_of_time(p) or never_placed(p) or paused(p) or held(p):
        _end(p)
        return p.done()
    resume(p)
    scale_down(p)
    vanished(p)
    create_missing(p)
    restart_or_fail(p)
    hung(p)
    cannot_start(p)
    decide(p)
    if p.status["phase"] not in TERMINAL:
        progress(p)
        for gate in p.stops:
            gate.drain_coming(p)
    _end(p)
    return p.done()


def _end(p: Pass) -> None:
    for gate in p.stops:
        gate.end(p)
