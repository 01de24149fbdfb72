"""The Jobs page's rows are ``t9k list -A``'s (tests/unit/cli/golden/
list-all-namespaces-wide.txt, without AGE), MSJob included, and a string from
the cluster reaches the page as data, never as markup."""

from __future__ import annotations

import copy
import json

from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of, logged_in

HEADERS = [
    "NAMESPACE",
    "NAME",
    "KIND",
    "PHASE",
    "REASON",
    "GPUS",
    "ALLOCATED",
    "DURATION",
    "PROGRESS",
    "ETA",
    "START",
    "NODES",
    "QUEUE",
]
MNIST_ROW = [
    "team-a",
    "mnist",
    "PyTorchTrainingJob",
    "Running",
    "-",
    "8",
    "6",
    "59m55s",
    "420/1000 (42%)",
    "6m26s",
    "-",
    "gpu-1,gpu-2",
    "research",
]
MS_ROW = [
    "team-b",
    "ms-resnet",
    "MSJob",
    "Failed",
    "BackoffLimitExceeded",
    "2",
    "0",
    "1h2m",
    "-",
    "-",
    "-",
    "<none>",
    "default",
]


def test_the_rows_json_is_what_t9k_list_shows() -> None:
    client, _ = logged_in()
    response = client.get("/api/jobs")
    assert response.status_code == 200
    assert response.json() == {
        "headers": HEADERS,
        "kinds": ["PyTorchTrainingJob", "DeepSpeedJob", "MSJob"],
        "rows": [
            {"key": "team-a/PyTorchTrainingJob/mnist", "cells": MNIST_ROW},
            {"key": "team-b/MSJob/ms-resnet", "cells": MS_ROW},
        ],
    }


def test_a_pod_change_moves_its_jobs_row_and_only_when_it_changes_it() -> None:
    board = board_of([f.MNIST])
    seen = []
    rows, unsubscribe = board.subscribe(seen.append)
    assert [r.cells[6] for r in rows] == ["0"]  # no pod yet: nothing allocated
    for pod in f.PODS[:3]:
        board.put_pod(pod)
    assert [c.row.cells[6] for c in seen if c.row] == ["2", "4", "6"]
    board.put_pod(f.PODS[0])  # the same pod again: the row does not move
    assert len(seen) == 3
    board.put_pod(f.PODS[4])  # another job's pod
    assert len(seen) == 3
    board.drop_pod(f.PODS[2])
    assert seen[-1].row is not None and seen[-1].row.cells[6] == "4"
    board.drop_job(f.MNIST)
    assert (seen[-1].type, seen[-1].key) == ("delete", "team-a/PyTorchTrainingJob/mnist")
    unsubscribe()
    board.put_job(f.MNIST)
    assert len(seen) == 5


MARKUP = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_markup_from_the_cluster_is_returned_as_data() -> None:
    job = copy.deepcopy(f.MNIST)
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = MARKUP
    job["status"]["conditions"][1]["reason"] = MARKUP
    client, _ = logged_in(board_of([job]))
    response = client.get("/api/jobs")
    assert response.headers["content-type"] == "application/json"
    (row,) = json.loads(response.text)["rows"]
    assert row["cells"][4] == MARKUP  # REASON, as it is
    assert row["cells"][12] == MARKUP  # QUEUE
    # The page itself holds no job data: its script writes the JSON's strings
    # with textContent (test_security.py).
    assert MARKUP not in client.get("/").text
    assert "alert" not in client.get("/").text
