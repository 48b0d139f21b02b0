"""FrozenMap behaves as a dict that is replaced, never mutated, on every change."""

from __future__ import annotations

import copy
import pickle
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_kernel.utils.frozenmap import FrozenMap

# a program of changes: ("set", key, value) or ("remove", key); few keys, so keys come back
KEYS = st.integers(0, 40)
OPS = st.lists(
    st.one_of(st.tuples(st.just("set"), KEYS, st.integers()), st.tuples(st.just("remove"), KEYS)), max_size=300
)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_every_version_reads_as_the_dict_built_by_the_same_changes(ops: list[tuple]) -> None:
    model: dict[int, int] = {}
    current: FrozenMap[int, int] = FrozenMap()
    versions = [(current, dict(model))]
    for op in ops:
        if op[0] == "set":
            model[op[1]] = op[2]
            current = current.set(op[1], op[2])
        elif op[1] in model:
            del model[op[1]]
            current = current.remove(op[1])
        else:
            with pytest.raises(KeyError):
                current.remove(op[1])
        versions.append((current, dict(model)))
    # every old version still reads as it did: same items, same order (a dict's)
    for version, expected in versions:
        assert list(version.items()) == list(expected.items())
        assert len(version) == len(expected) and version == expected and expected == version
        assert all((k in version) == (k in expected) for k in range(41))
    # two versions are equal exactly when their dicts are
    for (a, da), (b, db) in pairwise(versions):
        assert (a == b) == (da == db)


def test_a_replaced_key_keeps_its_place_and_a_re_added_key_goes_last() -> None:
    m = FrozenMap({"a": 1, "b": 2, "c": 3})
    assert list(m.set("a", 9)) == ["a", "b", "c"]
    assert list(m.remove("a").set("a", 9).items()) == [("b", 2), ("c", 3), ("a", 9)]


def test_a_change_leaves_the_old_map_as_it_was() -> None:
    old = FrozenMap({"a": 1})
    new = old.set("b", 2).remove("a")
    assert dict(old) == {"a": 1} and dict(new) == {"b": 2}


def test_a_change_copies_a_small_overlay_not_every_entry() -> None:
    # what makes a change cheap: after many changes the map is a shared dict plus at most about
    # sqrt(n) overlay entries, and maps built from one another share that dict
    m: FrozenMap[int, int] = FrozenMap()
    for i in range(4000):
        m = m.set(i, i)
    before = m
    m = m.set(4000, 0).set(17, -1).remove(3)
    assert m._base is before._base
    assert len(m._recent) + len(m._gone) <= 64 + 3
    assert dict(m) == {**{i: i for i in range(4000) if i != 3}, 4000: 0, 17: -1}


def test_it_pickles_and_copies_as_its_items() -> None:
    m = FrozenMap({"a": [1]}).set("b", [2])
    again = pickle.loads(pickle.dumps(m))
    assert isinstance(again, FrozenMap) and again == m and list(again) == ["a", "b"]
    deep = copy.deepcopy(m)
    deep["a"].append(5)
    assert m["a"] == [1]


def test_it_is_not_hashable_and_says_what_it_holds() -> None:
    with pytest.raises(TypeError):
        hash(FrozenMap())
    assert repr(FrozenMap({"a": 1})) == "FrozenMap({'a': 1})"
    with pytest.raises(KeyError):
        FrozenMap({"a": 1})["b"]


@pytest.mark.parametrize(
    "trinket, add, remove",
    [
        ("PeanutGalleryTrinket", lambda t, i: t.add_guidance("concern", f"Guidance {i}.", ttl=1000), "remove"),
        ("GetContextTrinket", lambda t, i: t.add_pending(f"task-{i}", f"query {i}") or f"task-{i}", "remove"),
    ],
)
def test_a_feed_replaces_the_items_map_without_copying_it(trinket: str, add, remove: str) -> None:
    from wm_kernel.session import Session

    t = Session(base_prompt="Hi.", auto_compose=False).trinket(trinket)
    ids = [add(t, i) for i in range(2000)]
    seen: list[dict] = []
    t.observe(seen.append, "entries")
    before = t.entries
    new_id = add(t, 2000)
    getattr(t, remove)(ids[5])
    # observers hear of each change with the old map intact ...
    assert [(len(c["old"]), len(c["new"])) for c in seen] == [(2000, 2001), (2001, 2000)]
    assert seen[0]["old"] is before and list(before) == ids
    assert list(t.entries) == ids[:5] + ids[6:] + [new_id]
    # ... and the new map shares the old one's entries instead of copying them
    assert t.entries._base is before._base
