"""Unit tests for t9k_operator.informers.store."""

from __future__ import annotations

import threading

import pytest

from t9k_operator.informers.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    Store,
    by_controller_uid,
    by_namespace,
    split_key,
)
from t9k_operator.objects import Obj, make_key, object_key


def obj(
    name: str,
    namespace: str | None = "default",
    *,
    owner: str | None = None,
    extra_owners: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
    rv: str = "1",
) -> Obj:
    meta: Obj = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    refs: list[Obj] = list(extra_owners or [])
    if owner:
        refs.append({"kind": "Job", "name": "j", "uid": owner, "controller": True})
    if refs:
        meta["ownerReferences"] = refs
    if labels:
        meta["labels"] = labels
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("o", "key"),
    [
        (obj("a", "ns1"), "ns1/a"),
        (obj("node-1", None), "node-1"),
        ({"metadata": {"name": "x", "namespace": ""}}, "x"),
    ],
)
def test_object_key(o: Obj, key: str) -> None:
    assert object_key(o) == key
    namespace, name = split_key(key)
    assert make_key(namespace, name) == key


@pytest.mark.parametrize("o", [{}, {"metadata": {}}, {"metadata": {"namespace": "a"}}])
def test_object_key_needs_a_name(o: Obj) -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        object_key(o)


@pytest.mark.parametrize(
    ("o", "namespaces", "uids"),
    [
        (obj("a", "ns1"), ["ns1"], []),
        (obj("a", None), [], []),
        (obj("a", "ns1", owner="u1"), ["ns1"], ["u1"]),
        (
            obj("a", "ns1", extra_owners=[{"uid": "not-controller", "controller": False}]),
            ["ns1"],
            [],
        ),
        (obj("a", "ns1", extra_owners=[{"uid": "u0"}], owner="u2"), ["ns1"], ["u2"]),
        ({"metadata": {"name": "a", "ownerReferences": [{"controller": True}]}}, [], []),
    ],
)
def test_builtin_index_functions(o: Obj, namespaces: list[str], uids: list[str]) -> None:
    assert by_namespace(o) == namespaces
    assert by_controller_uid(o) == uids


def test_by_namespace_index() -> None:
    store = Indexer()
    store.add(obj("a", "ns1"))
    store.add(obj("b", "ns1"))
    store.add(obj("c", "ns2"))
    store.add(obj("node", None))

    assert [object_key(o) for o in store.by_index(NAMESPACE_INDEX, "ns1")] == ["ns1/a", "ns1/b"]
    assert store.index_keys(NAMESPACE_INDEX, "ns2") == ["ns2/c"]
    assert store.by_index(NAMESPACE_INDEX, "nope") == []
    assert store.index_values(NAMESPACE_INDEX) == ["ns1", "ns2"]
    assert len(store) == 4


def test_by_controller_uid_index() -> None:
    store = Indexer()
    store.add(obj("p1", owner="job-1"))
    store.add(obj("p2", owner="job-1"))
    store.add(obj("p3", owner="job-2"))
    store.add(obj("orphan"))

    assert store.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["default/p1", "default/p2"]
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-2") == ["default/p3"]
    assert store.index_values(CONTROLLER_UID_INDEX) == ["job-1", "job-2"]


@pytest.mark.parametrize(
    ("before", "after", "old_value", "new_value"),
    [
        (obj("p", owner="job-1"), obj("p", owner="job-2", rv="2"), "job-1", "job-2"),
        (obj("p", owner="job-1"), obj("p", rv="2"), "job-1", None),
        (obj("p"), obj("p", owner="job-2", rv="2"), None, "job-2"),
    ],
)
def test_update_moves_object_between_index_values(
    before: Obj, after: Obj, old_value: str | None, new_value: str | None
) -> None:
    store = Indexer()
    store.add(obj("other", owner="job-1"))
    store.add(before)
    store.update(after)

    assert store.get("default/p") is after
    if old_value is not None:
        assert "default/p" not in store.index_keys(CONTROLLER_UID_INDEX, old_value)
    if new_value is not None:
        assert store.by_index(CONTROLLER_UID_INDEX, new_value) == [after]
    expected_values = sorted({"job-1"} | ({new_value} if new_value else set()))
    assert store.index_values(CONTROLLER_UID_INDEX) == expected_values


def test_delete_cleans_the_index() -> None:
    store = Indexer()
    a = obj("a", "ns1", owner="job-1")
    store.add(a)
    store.add(obj("b", "ns1", owner="job-1"))

    store.delete(a)
    assert store.get("ns1/a") is None
    assert store.index_keys(CONTROLLER_UID_INDEX, "job-1") == ["ns1/b"]

    store.delete_key("ns1/b")
    store.delete_key("ns1/never-there")  # absent: no error
    assert len(store) == 0
    assert store.index_values(CONTROLLER_UID_INDEX) == []
    assert store.index_values(NAMESPACE_INDEX) == []


def test_replace_swaps_everything_and_rebuilds_indexes() -> None:
    store = Indexer()
    store.add(obj("old", "ns1", owner="job-1"))
    store.add(obj("kept", "ns1", owner="job-1"))

    kept = obj("kept", "ns2", owner="job-2", rv="5")
    new = obj("new", "ns2", owner="job-2", rv="6")
    store.replace([kept, new], "100")

    assert sorted(store.keys()) == ["ns2/kept", "ns2/new"]
    assert store.resource_version == "100"
    assert store.index_values(CONTROLLER_UID_INDEX) == ["job-2"]
    assert store.index_values(NAMESPACE_INDEX) == ["ns2"]
    assert store.by_index(CONTROLLER_UID_INDEX, "job-2") == [kept, new]

    # Index bookkeeping keeps working after a replace.
    store.delete(kept)
    assert store.index_keys(NAMESPACE_INDEX, "ns2") == ["ns2/new"]


def test_reads() -> None:
    store = Store()
    a = obj("a")
    store.add(a)
    assert store.get("default/a") is a
    assert store.get(obj("a", rv="9")) is a  # by another version of the object
    assert store.get_by_key("default/a") is a
    assert store.get_by_key("default/b") is None
    assert "default/a" in store
    assert store.list() == [a]
    assert store.items() == {"default/a": a}
    assert store.keys() == ["default/a"]


def test_custom_multi_value_indexer_and_add_indexers() -> None:
    def by_label_values(o: Obj) -> list[str]:
        return sorted((o["metadata"].get("labels") or {}).values())

    store = Indexer({"labels": by_label_values})
    assert store.indexer_names == ["labels"]
    store.add(obj("a", labels={"x": "red", "y": "blue"}))
    store.add(obj("b", labels={"x": "red"}))
    assert store.index_keys("labels", "red") == ["default/a", "default/b"]
    assert store.index_keys("labels", "blue") == ["default/a"]

    store.add_indexers({NAMESPACE_INDEX: by_namespace})
    assert store.index_keys(NAMESPACE_INDEX, "default") == ["default/a", "default/b"]
    store.delete_key("default/a")
    assert store.index_values("labels") == ["red"]
    assert store.index_keys(NAMESPACE_INDEX, "default") == ["default/b"]

    with pytest.raises(ValueError, match="already exists"):
        store.add_indexers({"labels": by_label_values})


def test_unknown_index_raises_key_error() -> None:
    store = Indexer({})
    store.add(obj("a"))
    with pytest.raises(KeyError, match="no index named"):
        store.by_index(NAMESPACE_INDEX, "default")


def test_failing_index_function_leaves_store_unchanged() -> None:
    def picky(o: Obj) -> list[str]:
        if o["metadata"]["name"] == "bad":
            raise RuntimeError("boom")
        return ["ok"]

    store = Indexer({"picky": picky})
    good = obj("a")
    store.add(good)
    with pytest.raises(RuntimeError):
        store.update({"metadata": {"name": "bad", "namespace": "default"}})
    with pytest.raises(RuntimeError):
        store.replace([obj("bad")], "2")
    assert store.list() == [good]
    assert store.index_keys("picky", "ok") == ["default/a"]


def test_concurrent_writers_keep_indexes_consistent() -> None:
    store = Indexer()
    owners = ["job-a", "job-b", "job-c"]

    def writer(worker: int) -> None:
        for i in range(300):
            name = f"p{i % 20}"
            if i % 7 == 0:
                store.delete_key(f"default/{name}")
            else:
                store.add(obj(name, owner=owners[(i + worker) % 3], rv=str(i)))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    indexed = {
        key: uid
        for uid in store.index_values(CONTROLLER_UID_INDEX)
        for key in store.index_keys(CONTROLLER_UID_INDEX, uid)
    }
    actual = {object_key(o): by_controller_uid(o)[0] for o in store.list()}
    assert indexed == actual
