"""The one in-process memo (semanscope_nb.memo.Memo): LRU order, both bounds, any thread."""

from __future__ import annotations

import threading

import pytest

from semanscope_nb.memo import Memo


def test_the_least_recently_used_entry_goes_first():
    m = Memo(3)
    for k in "abc":
        m.put(k, k.upper())
    assert m.get("a") == "A"  # now the most recent: "b" is the oldest
    m.put("d", "D")
    assert sorted(m.keys()) == ["a", "c", "d"] and m.get("b") is None
    m.put("c", "C2")  # a second put refreshes the entry and replaces its value
    m.put("e", "E")
    assert sorted(m.keys()) == ["c", "d", "e"] and m.get("c") == "C2"


def test_a_size_bound_counts_the_sizes_and_refuses_a_value_larger_than_the_bound():
    m = Memo(100, sizeof=len)
    m.put("a", "x" * 60)
    m.put("b", "x" * 30)
    assert m.size == 90
    m.put("c", "x" * 20)  # 110 > 100: the oldest goes
    assert sorted(m.keys()) == ["b", "c"] and m.size == 50
    big = "x" * 101
    assert m.put("big", big) is big and "big" not in m and m.size == 50, "returned to the caller, not kept"


def test_bad_bounds_and_none_values_are_refused_by_name():
    with pytest.raises(ValueError, match="maxsize"):
        Memo(0)
    with pytest.raises(ValueError, match="None"):
        Memo(2).put("k", None)


def test_many_threads_at_once_keep_the_bound_and_lose_no_value():
    m = Memo(16)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(400):
                key = (t, i % 24)
                got = m.get(key)
                if got is not None and got != key:
                    raise AssertionError(f"{key} holds {got}")
                m.put(key, key)
                assert len(m) <= 16
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert len(m) == 16 and all(m.get(k) == k for k in m.keys())
