"""The runtime: what runs controllers, and knows no job kind.

Clocks, token buckets, the rate-limited workqueue, the controller loop, leader
election, the Event recorder, logging, the Prometheus metrics and ssh key
generation. The informers (``t9k_operator.informers``) and the API client
(``t9k_operator.kube``) are runtime too, in packages of their own. An import
contract (pyproject.toml) keeps job kinds out of all of them.
"""
