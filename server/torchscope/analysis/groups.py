"""``Groups``: key → the items that belong to it, for millions of items, in int arrays.

The context groups indices by an owner index in several places (the kernels an op launched,
the device spans a runtime call launched). As a dict of lists that costs ~100 bytes an item
(a dict entry, a list, an int object each); here it is 8 to 12: the members sorted by owner
(CSR), each group's bounds, and a slot per possible key. Lookups and the walk over all
groups run in C (``map`` over slices).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import ItemsView, Iterator, Mapping, Sequence
from itertools import compress, repeat
from operator import ge, ne
from typing import Any, TypeVar, overload

_T = TypeVar("_T")


class Groups(Mapping[int, Sequence[int]]):
    """Key → the items (ascending) whose owner it is, from one owner per item (``-1``: none);
    keys come in the order of their first item, as a dict filled item by item would keep
    them. A key's items are an ``array`` slice."""

    __slots__ = ("_at", "_hi", "_keys", "_lo", "_members")

    def __init__(self, n_keys: int, owner: Sequence[int]) -> None:
        owned = compress(range(len(owner)), map(ge, owner, repeat(0)))
        items = sorted(owned, key=owner.__getitem__)  # stable: ascending within a key
        keys = list(map(owner.__getitem__, items))
        firsts = [0, *compress(range(1, len(items)), map(ne, keys[1:], keys))] if items else []
        # the groups in the order of their first item (the smallest, as items ascend)
        order = sorted(range(len(firsts)), key=list(map(items.__getitem__, firsts)).__getitem__)
        bounds = [*firsts, len(items)]
        self._members = array("q", items)
        self._lo = array("q", map(bounds.__getitem__, order))
        self._hi = array("q", map(bounds.__getitem__, map((1).__add__, order)))
        self._keys = array("q", map(keys.__getitem__, map(firsts.__getitem__, order)))
        self._at = array("q", [-1]) * n_keys
        deque(map(self._at.__setitem__, self._keys, range(len(order))), maxlen=0)  # in C

    def _group(self, key: object) -> int:
        at = self._at
        return at[key] if isinstance(key, int) and 0 <= key < len(at) else -1

    def __getitem__(self, key: int) -> Sequence[int]:
        g = self._group(key)
        if g < 0:
            raise KeyError(key)
        return self._members[self._lo[g] : self._hi[g]]

    @overload
    def get(self, key: int, /) -> Sequence[int] | None: ...
    @overload
    def get(self, key: int, default: Sequence[int] | _T, /) -> Sequence[int] | _T: ...
    def get(self, key: int, default: Any = None, /) -> Any:  # not Mapping.get's try/except
        g = self._group(key)
        return default if g < 0 else self._members[self._lo[g] : self._hi[g]]

    def values_in_order(self) -> Iterator[Sequence[int]]:
        """Each key's items, in key order (slices taken in C)."""
        return map(self._members.__getitem__, map(slice, self._lo, self._hi))

    def items(self) -> ItemsView[int, Sequence[int]]:
        return _Items(self)

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return self._group(key) >= 0


class _Items(ItemsView[int, Sequence[int]]):
    """``Groups.items()``, walked in C."""

    _mapping: Groups

    def __iter__(self) -> Iterator[tuple[int, Sequence[int]]]:
        return zip(self._mapping._keys, self._mapping.values_in_order())
