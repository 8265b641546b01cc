"""``Groups``: key → the items that belong to it, for millions of items, in int arrays.

The context groups indices by an owner index in several places (the kernels an op launched,
the device spans a runtime call launched). As a dict of lists that costs ~100 bytes an item
(a dict entry, a list, an int object each); here it is 4 to 6 (8 to 12 past 2**31 items):
the members sorted by owner (CSR), each group's bounds, and a slot per possible key.
Lookups and the walk over all groups run in C (``map`` over slices).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import ItemsView, Iterator, Mapping, Sequence
from itertools import compress, count, repeat
from operator import add, ge, ne
from typing import Any, TypeVar, overload

_T = TypeVar("_T")
_INT32_MAX = 2**31 - 1


class Groups(Mapping[int, Sequence[int]]):
    """Key → the items (ascending) whose owner it is, from one owner per item (``-1``: none);
    keys come in the order of their first item, as a dict filled item by item would keep
    them. A key's items are an ``array`` slice."""

    __slots__ = ("_at", "_bounds", "_keys", "_members", "_order")

    def __init__(self, n_keys: int, owner: Sequence[int]) -> None:
        n = len(owner)
        code = "i" if max(n_keys, n) <= _INT32_MAX else "q"
        owned = bytearray(map(ge, owner, repeat(0)))
        # One sort of one int per item, key × n + item: by key, ascending items within (a
        # sort with key= would hold two int objects an item, and the list of items).
        width = max(n, 1)
        packed = sorted(
            map(add, map(width.__mul__, compress(owner, owned)), compress(range(n), owned))
        )
        self._members = array(code, map(width.__rmod__, packed))
        keys = array(code, map(width.__rfloordiv__, packed))
        del packed
        # group g (in key order): members[bounds[g]:bounds[g + 1]], key keys[g]
        self._bounds = array(code, [0] if keys else [])
        self._bounds.extend(compress(range(1, len(keys)), map(ne, keys[1:], keys)))
        self._keys = array(code, map(keys.__getitem__, self._bounds))
        self._bounds.append(len(keys))
        del keys
        self._at = array(code, [-1]) * n_keys
        deque(map(self._at.__setitem__, self._keys, count()), maxlen=0)  # in C
        # the groups in the order of their first item (the smallest, as items ascend): a
        # slot per item holds the group it starts
        slot = array(code, [-1]) * n
        deque(
            map(slot.__setitem__, map(self._members.__getitem__, self._bounds[:-1]), count()),
            maxlen=0,
        )
        self._order = array(code, compress(slot, map(ge, slot, repeat(0))))

    def _group(self, key: object) -> int:
        at = self._at
        return at[key] if isinstance(key, int) and 0 <= key < len(at) else -1

    def _slice(self, g: int) -> Sequence[int]:
        return self._members[self._bounds[g] : self._bounds[g + 1]]

    def __getitem__(self, key: int) -> Sequence[int]:
        g = self._group(key)
        if g < 0:
            raise KeyError(key)
        return self._slice(g)

    @overload
    def get(self, key: int, /) -> Sequence[int] | None: ...
    @overload
    def get(self, key: int, default: Sequence[int] | _T, /) -> Sequence[int] | _T: ...
    def get(self, key: int, default: Any = None, /) -> Any:  # not Mapping.get's try/except
        g = self._group(key)
        return default if g < 0 else self._slice(g)

    def values_in_order(self) -> Iterator[Sequence[int]]:
        """Each key's items, in the keys' order (slices taken in C)."""
        bounds = self._bounds
        lo = map(bounds.__getitem__, self._order)
        hi = map(bounds.__getitem__, map((1).__add__, self._order))
        return map(self._members.__getitem__, map(slice, lo, hi))

    def items(self) -> ItemsView[int, Sequence[int]]:
        return _Items(self)

    def __iter__(self) -> Iterator[int]:
        return map(self._keys.__getitem__, self._order)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return self._group(key) >= 0


class _Items(ItemsView[int, Sequence[int]]):
    """``Groups.items()``, walked in C."""

    _mapping: Groups

    def __iter__(self) -> Iterator[tuple[int, Sequence[int]]]:
        return zip(self._mapping, self._mapping.values_in_order())
