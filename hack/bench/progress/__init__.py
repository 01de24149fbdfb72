"""Benchmark: the operator's progress endpoint under many reporting processes.

Four parts, each printed with its figures (``--parts`` picks some):

``connections``
    The endpoint as the operator serves it (``integrations/progress/server``'s
    event loop serving ``integrations/progress/endpoint.ProgressEndpoint``) and N reporters
    (``report.Reporter.send``) sending unpaced for a few seconds, once with a
    new TLS connection per report and once with the connection kept: reports
    a second, p50/p99, and the ratio.
``hang``
    A simulation on a fake clock, no sockets: the endpoint's ``handle`` driven
    by 1,000 replicas of 8 ranks (rank 0 reports progress, the others
    liveness), each rank sending again when the answer's ``next`` says, for
    10 minutes, the job's ``hangTimeoutSeconds`` 60; one replica goes silent
    at minute 5. The hang rule (the oldest pod heard, against the timeout) is
    checked every simulated second: healthy replicas never judged hung, the
    silent one caught within its window.
``fairness``
    The served endpoint; a 512-rank job (64 pods of 8) sends as fast as it may
    (once at the told pace, once ignoring it, on every connection at once)
    while 50 small jobs (one pod of 8 ranks each) report at their pace: the
    latency of the small jobs' reports (p50, p99) and the 429s of each.
``scale``
    The served endpoint holding 10,000 ranks (1,250 pods of 8, in 10 jobs),
    each on its own kept connection at the told pace: reports a second, the
    endpoint's CPU (its process's and its front's CPU time over the wall
    time, in cores) in the steady state, p50/p99 and 429s.

The reporting processes of ``fairness`` and ``scale`` run in a process of
their own (hack/bench/common/reporters.py: asyncio, one connection each, as
``report.Reporter`` does: keep the connection, wait ``next``); the
endpoint's process does nothing else, so its CPU time and its front's (the
process holding the connections) are the endpoint's. The TokenReview is
answered in process (once per token, remembered as in the operator).

Run: ``.venv/bin/python -m hack.bench.progress [--parts connections,hang,fairness,scale]``.

Its modules: ``world`` (the endpoint as the operator builds it, served),
``connections``, ``hang`` and ``load`` (fairness and scale: the reporters'
process driven against the endpoint), and ``cli``.
"""
