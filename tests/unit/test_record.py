"""``analysis.record`` builds the data classes the analysis used ``dataclasses`` for, without
its import cost: each record behaves as the dataclass with the same fields would."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest

from torchscope.analysis.record import (
    FrozenInstanceError,
    as_dict,
    field,
    field_names,
    record,
    replace,
)


@record(frozen=True)
class Point:
    x: int
    y: float = 0.5
    tags: list[str] = field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: float = 0.5
    tags: list[str] = dataclasses.field(default_factory=list)


@record(frozen=True)
class Pair:
    a: int
    b: str = ""


@record
class Box:
    corner: Point
    points: list[Point]
    names: dict[str, tuple[int, ...]]
    note: str | None = None


def _repr_body(obj: object) -> str:
    return repr(obj).split("(", 1)[1]


def test_init_defaults_and_factories_as_a_dataclass() -> None:
    a, b = Point(1), Point(2, 3.0, ["t"])
    assert (a.x, a.y, a.tags) == (1, 0.5, [])
    assert (b.x, b.y, b.tags) == (2, 3.0, ["t"])
    assert Point(1).tags is not Point(1).tags  # a fresh list each time
    assert Point(x=4, tags=["a"]) == Point(4, 0.5, ["a"])
    assert field_names(Point) == tuple(f.name for f in dataclasses.fields(DataPoint))
    assert _repr_body(Point(1, 2.0, ["a"])) == _repr_body(DataPoint(1, 2.0, ["a"]))
    assert repr(Point(1)).startswith("Point(")
    assert Point.__match_args__ == DataPoint.__match_args__
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_equality_and_hash() -> None:
    assert Point(1, 2.0) == Point(1, 2.0)
    assert Point(1, 2.0) != Point(1, 3.0)
    other: object = DataPoint(1)
    assert Point(1) != other  # another class never compares equal
    assert {Pair(1, "x"): "found"}[Pair(1, "x")] == "found"
    assert hash(Pair(1)) == hash(Pair(1, "")) != hash(Pair(2))
    assert Box.__hash__ is None  # mutable: compared by value, so not hashable
    box = Box(Point(1), [], {})
    assert box == Box(Point(1), [], {})


def test_frozen_records_refuse_assignment_and_mutable_ones_take_it() -> None:
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    box = Box(p, [], {})
    box.note = "changed"
    assert box.note == "changed"


def test_replace_and_as_dict_as_dataclasses_do() -> None:
    p = Point(1, 2.0, ["a"])
    assert replace(p, y=9.0) == Point(1, 9.0, ["a"])
    assert p.y == 2.0
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(p, z=1)
    box = Box(p, [Point(2)], {"k": (1, 2)}, "n")
    expected: dict[str, Any] = {
        "corner": dataclasses.asdict(DataPoint(1, 2.0, ["a"])),
        "points": [dataclasses.asdict(DataPoint(2))],
        "names": {"k": (1, 2)},
        "note": "n",
    }
    assert as_dict(box) == expected
    with pytest.raises(TypeError, match="not a record"):
        as_dict(DataPoint(1))


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="'b' has no default"):

        @record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]


def test_the_analysis_imports_neither_dataclasses_nor_inspect() -> None:
    """The point of ``record``: ``import dataclasses`` and ``inspect`` cost ~13 ms of a
    fresh process's analysis; a module that brings them back shows up here."""
    code = (
        "import sys; from torchscope.analysis import analyze_trace; from torchscope.report import render_report; "
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
