"""Benchmark: the operator's reconciles while its own progress endpoint holds
10,000 reporting ranks, against the same run with no reports.

Each scenario runs on a fresh local control plane (``python3 -m hack.cluster up
--name t9k-beside``, or ``--cluster``; taken down after it), with this
tree's operator at its default flags and its progress endpoint at
``127.0.0.1`` (``--progress-url``; a certificate of the bench's own CA in
``--progress-cert-dir``), beside the benches' stand-in
kubelet (hack/bench/common/kubelet.py) (every pod marked Running at once):

1. ``--big`` jobs of ``--big-replicas`` replicas (10 x 125: 1,250 pods) are
   created and run;
2. ``reporting`` only: each of those pods gets a token from the API server
   (TokenRequest for the endpoint's audience, bound to the pod, as its
   projected volume would), and its 8 ranks report to the URL the operator
   put in the pod's environment (local rank 0 its progress, the others
   liveness), each on its own kept TLS connection at the pace the endpoint
   tells, connecting over ``--ramp`` seconds (the reporters' process,
   hack/bench/common/reporters.py); ``quiet`` waits as long with no reports;
3. ``--settle`` seconds of steady state: the operator's CPU with nothing
   but the reports to do;
4. the job-start run: ``--start`` jobs (``JOBSxREPLICAS``, 200x4) created as
   ``python -m hack.bench.job_start`` creates them, until each is Running.

Measured over the job-start run, from the difference of the operator's
/metrics before and after it: the job controller's reconcile time (p50 and
p99, interpolated within the histogram's buckets as Prometheus's
``histogram_quantile`` does) and its mean workqueue wait (the queue's
buckets are powers of ten, too coarse for a quantile), each new job's time from its
create to Running (the stand-in's watch), the operator's CPU (cores: its
process and its progress front's), and
the reports the endpoint took and refused (``t9k_progress_reports_total``).
The ratios are reporting / quiet; ``--repeat`` interleaves the scenarios
and the table gives every run and the ratios of the medians.

Run: ``.venv/bin/python -m hack.bench.progress_beside [--repeat 2]``.

Its modules: ``histograms`` (the operator's /metrics), ``ranks`` (the
reporting ranks and their tokens), ``run`` (a scenario's run), ``operator``
(the operator's processes) and ``cli`` (the runs and their table).
"""
