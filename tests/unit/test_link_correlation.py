"""The correlation join (``link._ByCorrelation``: an ascending run searched by bisection, a
dict for the rest) finds what the dict of every runtime call it replaced found: the last
call with the id, -1 for none, whatever order, repeats, nulls or types the ids come in."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from torchscope.analysis.index.link import _ByCorrelation
from torchscope.ingest.model import Span

_IDS = st.one_of(
    st.integers(0, 40),
    st.integers(-(2**70), 2**70),
    st.none(),
    st.sampled_from(["a", "b", "7"]),
    st.sampled_from([3.0, 5.5]),
    st.lists(st.integers(0, 3), max_size=2),  # unhashable, as a JSON list would be
)


def _spans(ids: list[Any]) -> list[Span]:
    return [Span(float(i), float(i) + 1.0, "x", 0, {}, c) for i, c in enumerate(ids)]


def _expected(runtime: list[Any], device: list[Any]) -> list[int]:
    """The dict the join replaced (``link`` before it): the last call with each id."""
    by_id: dict[Any, int] = {}
    for i, c in enumerate(runtime):
        if isinstance(c, (int, float, str)):
            by_id[c] = i
    return [by_id.get(c, -1) if isinstance(c, (int, float, str)) else -1 for c in device]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    runtime=st.lists(st.integers(0, 40), max_size=40),
    device=st.lists(st.integers(-2, 45), max_size=40),
)
def test_integer_ids_in_any_order(runtime: list[int], device: list[int]) -> None:
    found = _ByCorrelation(_spans(runtime)).lookup(_spans(device))
    assert list(found) == _expected(runtime, device)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(runtime=st.lists(_IDS, max_size=30), device=st.lists(_IDS, max_size=30))
def test_nulls_strings_floats_lists_and_huge_ids(runtime: list[Any], device: list[Any]) -> None:
    found = _ByCorrelation(_spans(runtime)).lookup(_spans(device))
    assert list(found) == _expected(runtime, device)


def test_ascending_ids_need_no_dict() -> None:
    """Kineto's usual case: ids rising with the calls. Nothing goes to the dict, and no
    positions are kept (the run is every call)."""
    runtime = list(range(10, 10_000, 3))
    join = _ByCorrelation(_spans(runtime))
    assert not join._extra and join._idx is None
    device = [10, 13, 11, 9_997, 10_000, 5]
    assert list(join.lookup(_spans(device))) == _expected(runtime, device)


def test_a_few_interleaved_ids_go_to_the_dict() -> None:
    """Two threads launching at once: a call whose id is below an earlier one."""
    runtime = [1, 2, 5, 3, 6, 4, 7, 7]
    join = _ByCorrelation(_spans(runtime))
    assert set(join._extra) == {3, 4, 7}
    assert list(join.lookup(_spans([3, 4, 5, 7, 8]))) == [3, 5, 2, 7, -1]
