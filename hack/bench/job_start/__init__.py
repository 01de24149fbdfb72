"""Benchmark: how fast the operator starts jobs, beside the API server's own speed.

For each size (``JOBSxREPLICAS``: 200x4, 1x512 (one job of 512 replicas),
1000x4 and 10000x4 by default, each with the scenarios of
:data:`DEFAULT_PLAN`) and each scenario, on a fresh local control plane
(``python3 -m hack.cluster up --name t9k-bench``, or ``--cluster``; taken down after
the run):

* ``ceiling``: no operator; the bench creates the same pods itself (built by
  the operator's own builder, owner references dropped) with
  ``--concurrency`` threads, the operator's limit on pod creates in flight;
* ``writes``: no operator; a stand-in controller, a separate process of its
  own like the operator, makes the same writes a job's start needs with no
  logic between them: on each job's watch event, its first status, its
  Service, its pods (the operator's builders' output, all at once through a
  pool of ``--concurrency`` threads) and one Event, one job after another on
  each of ``--concurrency`` threads; once its pod watch has
  seen all of a job's pods Running, the job's Running status. The ceiling
  under any controller that makes those writes (``ceiling`` makes only the pods);
* ``defaults``: this tree's operator at its default flags;
* ``tuned``: this tree's operator with ``--kube-api-qps 1000 --kube-api-burst 2000``;
* ``baseline``: the operator at ``--baseline`` (default a08a3ab, the
  operator before its job-start work), checked out into a temporary git worktree, at its defaults;
* ``kubeflow``: Kubeflow's training-operator v1 (``kubeflow``: the release
  hack/versions.env pins, built from its Go module the first time) on the
  same jobs as PyTorchJobs (a Master and N - 1 Workers), side by side with
  the operator: its RSS, CPU and times; run only when named
  (``--scenarios defaults,kubeflow``).

A stand-in kubelet in the bench marks every pod Running at once (one status
patch, as a kubelet does). The pods carry ``schedulerName:
t9k-bench-unscheduled`` and the annotation ``kwok.t9k.dev/manual: "true"``, so
neither kube-scheduler (whose client limit of 50 QPS would dominate the
figures) nor KWOK's stages touch them.

The operator's integrations, for ``defaults`` and ``tuned`` only (the other
scenarios have no operator, or an older one, and refuse them):

* ``--kueue``: the cluster runs Kueue (``python3 -m hack.cluster up --kueue``) and
  the operator ``--kueue``. Before the operator starts, the bench makes the
  WorkloadPriorityClass ``t9k-priority-50`` (from
  manifests/kueue/workload-priority-classes.yaml), a ResourceFlavor whose
  ``nodeLabels`` are ``type: kwok`` (every KWOK node's), a ClusterQueue
  open to its namespace with CPU quota for every pod at once, and the
  LocalQueue ``bench``, and waits for the queues to be Active. Every job
  names the LocalQueue (label ``kueue.x-k8s.io/queue-name`` and
  ``spec.scheduler.t9kScheduler.queue``) and priority 50, and each replica
  requests 100m of CPU (Kueue assigns flavors only to requested
  resources): the operator creates each job's Workload with the class's
  priority, and once Kueue admits it, pods whose node selector has the
  flavor's labels.
* ``--gang volcano|coscheduling``: the cluster runs that gang scheduler
  (``up --gang``) and the operator ``--gang-scheduler=<backend>``: every job
  gets a PodGroup. The operator gives its pods the backend's
  ``schedulerName`` (``volcano``, ``scheduler-plugins-scheduler``) over the
  template's ``t9k-bench-unscheduled``, so the gang scheduler, not
  kube-scheduler, binds them, as the option means; they keep
  ``kwok.t9k.dev/manual``, so KWOK still leaves their status alone, and the
  stand-in kubelet marks a pod Running once it sees it bound to a node (not
  at once, as without a gang scheduler: a kubelet runs only pods bound to
  its node). Since the cluster's four KWOK nodes hold 110 pods each, the
  bench adds nodes of the same shape (``kwok-bench-node-<i>``) for a
  quarter more pods than the run has. With ``--kueue`` too, the jobs' pods
  name the PriorityClass ``t9k-priority-50`` (from
  manifests/scheduling/priority-classes.yaml, made too).

A run whose pods lack the expected ``schedulerName`` (or, with ``--kueue``,
the flavor's node labels) says how many in its row.

``--apiserver-flag FLAG`` (repeatable) starts every run's kube-apiserver with
FLAG, e.g. low ``--max-requests-inflight`` and
``--max-mutating-requests-inflight``: each run then says how many of the
operator's requests the server refused with 429 and the operator sent again
(``t9k_client_retries_total``) and how many error lines its log has.

Measured from the moment the bench starts submitting: the time until every
pod exists (the bench's watch saw it) and until every job's status says
Running; the operator's reads of the API server until every job is Running
("operator GET/LIST, reconciles / informers": the differences, before the
first submission and then, of its ``rest_client_requests_total`` of method
GET, which covers gets, list pages and the start of a watch, and of its
``t9k_informer_requests_total``, the informers' own list pages and
watches; the reconciles' reads are the first less the second); the operator's
CPU seconds (``/proc/<pid>/stat``, from just before the submission to the
end) and its peak RSS (``VmHWM``) and RSS at ready; the API server's writes
during the run, by verb and resource (the difference of
``apiserver_request_total`` before and after; it has no user-agent label, so
writes are told apart by resource: the bench's are the jobs' creates and the
pod status patches of the stand-in kubelet).

The operator's reconciles read only their informers' caches, so their
GET/LIST is 0 unless something reads past them. The informers' is 0 unless a
watch ended: the API server closes watchers that do not take its events in
time (``apiserver_terminated_watchers_total``; on this 2-core machine, under
load, all of a resource's watchers at once); a run where it did says "the
API server closed N watchers" in its row, and each of the operator's
informers whose watch it closed watches again from its last resourceVersion:
one request each, in the informers' column.

Prints one table per size, then where the time and the CPU went, the
memory, every comparison of two scenarios of a size as ratios
(:func:`comparisons`), ``--py-spy``'s profile of the operator, and the
targets. Run:
``make bench`` (or ``.venv/bin/python -m hack.bench.job_start``); choose with
``--sizes 200x4,1x512`` and ``--scenarios ceiling,tuned``; ``--repeat 3``
runs each three times, interleaved, and takes the targets from the medians;
``--kueue`` and ``--gang volcano`` (above) run the operator's scenarios only
(by default those of the default plan), and ``--json FILE`` writes every
run's figures, ``operator_reads`` and ``informer_reads`` among them.

Its modules: ``plan`` (sizes and scenarios), ``integrations`` and
``prepare`` (``--kueue``, ``--gang``), ``ceiling`` and ``writer`` (the
scenarios without the operator), ``kubeflow`` (Kubeflow's training-operator),
``apiserver`` (the API server's figures),
``pyspy``, ``stores`` (the informer stores' memory), ``run`` (a run's
figures), ``runner`` (a run), ``tables`` and ``compare`` (the printed
figures) and ``cli`` (the command line).
"""
