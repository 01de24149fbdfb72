"""Distributed XGBoost as an XGBoostTrainingJob's replicas run it: the master
(RANK 0) starts the tracker on MASTER_ADDR:MASTER_PORT for WORLD_SIZE workers,
as T9k's examples do; every replica, the master too, joins the collective as
task RANK and trains a couple of rounds on a tiny synthetic shard of its own.
Each prints its rank, the world it saw and a digest of the model, which the
collective makes the same on every replica."""

import hashlib
import os

import numpy as np
import xgboost
from xgboost import collective
from xgboost.tracker import RabitTracker

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
tracker = None
if rank == 0:
    tracker = RabitTracker(n_workers=world, host_ip=addr, port=port, sortby="task", timeout=120)
    tracker.start()
config = {"dmlc_tracker_uri": addr, "dmlc_tracker_port": port, "dmlc_task_id": str(rank)}
with collective.CommunicatorContext(**config):
    rng = np.random.default_rng(rank)
    x = rng.random((64, 4))
    y = (x[:, 0] + x[:, 1] > 1).astype(int)
    params = {"objective": "binary:logistic", "tree_method": "hist", "nthread": 1}
    booster = xgboost.train(params, xgboost.DMatrix(x, label=y), num_boost_round=2)
    digest = hashlib.sha256("".join(booster.get_dump()).encode()).hexdigest()[:16]
    print(
        f"rank {collective.get_rank()} of {collective.get_world_size()}: "
        f"{booster.num_boosted_rounds()} rounds, model {digest}",
        flush=True,
    )
if tracker is not None:
    tracker.wait_for(120)
