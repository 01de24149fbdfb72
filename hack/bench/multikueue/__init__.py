"""Benchmark: MultiKueue's dispatch of many jobs from a manager cluster to two
workers, and what bounds its pace.

The trio is the one ``python3 -m hack.cluster multikueue --name bmk`` makes
(``bmk`` started anew, then ``bmk-worker-1`` and ``bmk-worker-2``, each with
Kueue, connected by MultiKueueClusters, the MultiKueueConfig ``workers`` and
the AdmissionCheck ``multikueue``). On each cluster the bench adds the CRDs,
the namespace ``bench``, the WorkloadPriorityClass the jobs name, and the
queues of ``hack.bench.job_start --kueue`` with CPU quota for every job at
once (the manager's ClusterQueue names the check), and starts this tree's
operator with ``--kueue`` (its progress endpoint off; ``--operator-flags``
adds more). The benches' stand-in kubelet (hack/bench/common/kubelet.py)
marks each worker's pods Running the moment it sees them, so neither
kube-scheduler nor KWOK's capacity is in the figure.

``--jobs`` PyTorchTrainingJobs (1000; one replica asking 100m of CPU,
``spec.managedBy: kueue.x-k8s.io/multikueue``, in the LocalQueue) are created
on the manager, 8 at a time. The bench's watches note when each job reaches
each stage: its Workload on the manager, quota reserved there, a Workload
made on a worker, quota reserved there, the check ``multikueue`` Ready (the
worker's job made), the job Running on its worker (the worker's job's
``status.phase``) and Running on the manager (the status MultiKueue copies
back). It prints, as Markdown: the throughput from the first create to the
last job Running on a worker, the per-job create -> Running latency (p50 /
p95, on the worker and on the manager), each stage's count, end and step
time, each operator's CPU seconds, peak RSS, wait on its own client-side
limiter and 429s, the CPU of every process of the three clusters and the
machine's busy share, the requests MultiKueue's clients sent each worker
(the worker's ``apiserver_request_total``: GET, POST, PUT, PATCH, DELETE of
workloads and pytorchtrainingjobs without a subresource, which only
MultiKueue sends there), and client-go's client-side throttling lines in
each Kueue's log. The three clusters are taken down at the end, also when
the run fails, and their state folders checked gone.

Run: ``.venv/bin/python -m hack.bench.multikueue [--jobs 1000]`` (``make
bench``, with ``MK_ARGS``). Its modules: ``trio`` (the clusters, queues and
operators), ``run`` (the watches, the creates, the wait), ``figures`` (the
statistics, from what the run noted) and ``cli``.
"""
