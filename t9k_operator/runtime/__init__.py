"""The runtime: what runs controllers (queues, workers, wiring, leader election, Events).
May import ``informers``, ``kube``, ``foundation``, ``resources`` and ``objects``; never a job kind.

The rate-limited workqueue and its rate limiters, the controller loop, leader
election, the Event recorder, batched creates, logging and ssh key generation.
It sits on top of the plumbing: the informers (``t9k_operator.informers``),
the API client (``t9k_operator.kube``) and the clock, token bucket and metrics
(``t9k_operator.foundation``), each a package of its own. Import contracts
(pyproject.toml) keep the arrows one way (runtime -> informers -> kube ->
foundation) and job kinds out of all of them.
"""
