"""``Groups`` and ``link.Launched`` hold what the dicts of lists they replaced held, in the
same order (later sums run over them in that order)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchscope.analysis.index.groups import Groups
from torchscope.analysis.index.link import Launched


def _dict_of_lists(owner: list[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, key in enumerate(owner):
        if key >= 0:
            out.setdefault(key, []).append(i)
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(owner=st.lists(st.integers(-1, 9), max_size=60))
def test_groups_are_the_dict_of_lists(owner: list[int]) -> None:
    groups = Groups(10, owner)
    expected = _dict_of_lists(owner)
    assert list(groups) == list(expected) and len(groups) == len(expected)
    assert {k: list(v) for k, v in groups.items()} == expected
    assert all((k in groups) == (k in expected) for k in range(-2, 12))
    assert groups.get(11) is None and groups.get(-1, ()) == ()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(columns=st.lists(st.lists(st.integers(-1, 5), max_size=12), min_size=3, max_size=3))
def test_launched_lists_each_runtime_calls_device_spans(columns: list[list[int]]) -> None:
    launched = Launched(6, columns)
    expected: dict[int, list[tuple[str, int]]] = {}
    for label, rts in zip(("kernel", "memcpy", "memset"), columns):
        for i, r in enumerate(rts):
            if r >= 0:
                expected.setdefault(r, []).append((label, i))
    assert dict(launched.items()) == expected and sorted(launched) == sorted(expected)
