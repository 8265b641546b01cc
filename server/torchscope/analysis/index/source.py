"""Map an op or runtime call back to a source file and line, where the trace allows it.

Three sources, most precise first:

1. torchscope's own ``torchscope:L<line>`` markers (the worker's attribution pass wraps each
   statement of the profiled function in one): the line that *ran*;
2. ``python_function`` events (``with_stack=True``): the innermost frame outside torch and
   site-packages;
3. the legacy ``Call stack`` arg (torch 1.8-1.9 ``with_stack``): same filter.

Frames from ``with_stack`` carry the def line of a function in some torch versions
(kineto#630), which is still the right file and function.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...ingest import LINE_MARKER_PREFIX, Trace
from .nesting import Nesting

_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.*)$")
_MARKER = re.compile(rf"^{re.escape(LINE_MARKER_PREFIX)}(?P<line>\d+)(?::(?P<file>.+))?$")

LIBRARY_MARKERS = (
    "site-packages/",
    "dist-packages/",
    "/lib/python",
    "<built-in",
    "<frozen",
    "torch/",
    "torch\\",
    "threading.py",
    "runpy.py",
)
"""A frame whose path contains one of these is library code, not the user's."""


def parse_frame(text: str) -> tuple[str, int, str] | None:
    """``'model.py(12): forward'`` → ``('model.py', 12, 'forward')``."""
    m = _FRAME.match(text.strip())
    if m is None:
        return None
    return m.group("file"), int(m.group("line")), m.group("func")


def is_library(path: str) -> bool:
    """True for frames in torch, the standard library or installed packages."""
    return path.startswith("torch/") or any(marker in path for marker in LIBRARY_MARKERS)


def marker_line(name: str) -> tuple[str | None, int] | None:
    """``torchscope:L12`` → ``(None, 12)``; ``torchscope:L12:path.py`` → ``('path.py', 12)``."""
    m = _MARKER.match(name)
    if m is None:
        return None
    return m.group("file"), int(m.group("line"))


_MARKER_IN_TEXT = re.compile(
    rf"{re.escape(LINE_MARKER_PREFIX)}(?P<line>\d+)(?::(?P<file>[^\s,;()]+))?"
)


def lines_for_markers(text: str) -> str:
    """``torchscope:L182 runs 65 µs`` → ``line 182 runs 65 µs``: what a reader sees instead
    of a line marker's name (``torchscope:L12:path.py`` → ``line 12 of path.py``)."""

    def said(m: re.Match[str]) -> str:
        return f"line {m['line']}" + (f" of {m['file']}" if m["file"] else "")

    return _MARKER_IN_TEXT.sub(said, text)


def user_frame(args: Any) -> tuple[str, tuple[str, int, str]] | None:
    """The innermost frame outside torch and installed packages in an event's ``Call stack``
    arg (``'a.py(3): f;train.py(10): step;…'``, innermost first): its text and its parts."""
    stack = args.get("Call stack") if isinstance(args, Mapping) else None
    if not isinstance(stack, str) or not stack:
        return None
    for frame in stack.split(";"):
        parsed = parse_frame(frame)
        if parsed is not None and not is_library(parsed[0]):
            return frame.strip(), parsed
    return None


def _from_call_stack(args: Any) -> tuple[str, int] | None:
    found = user_frame(args)
    return None if found is None else (found[1][0], found[1][1])


class SourceMap:
    """Answers "which file and line caused this op / runtime call?" for one trace."""

    def __init__(self, trace: Trace, nest: Nesting) -> None:
        self.trace = trace
        self.nest = nest
        self._ann_cache: dict[int, tuple[str | None, int] | None] = {}
        self._py_cache: dict[int, tuple[str, int] | None] = {}
        self._stack_cache: dict[int, tuple[str | None, int | None]] = {}
        self.has_markers = any(a.name.startswith(LINE_MARKER_PREFIX) for a in trace.annotations)
        self.has_python = bool(trace.python)
        self.has_call_stacks = any(
            isinstance(o.args.get("Call stack"), str) for o in trace.ops[:2000]
        )

    @property
    def available(self) -> bool:
        """True when the trace carries any source information at all."""
        return self.has_markers or self.has_python or self.has_call_stacks

    def _marker(self, ann: int) -> tuple[str | None, int] | None:
        if ann < 0 or not self.has_markers:
            return None
        if ann in self._ann_cache:
            return self._ann_cache[ann]
        found: tuple[str | None, int] | None = None
        for a in self.nest.annotation_chain(ann):
            found = marker_line(self.trace.annotations[a].name)
            if found is not None:
                break
        self._ann_cache[ann] = found
        return found

    def _python(self, py: int) -> tuple[str, int] | None:
        if py < 0:
            return None
        if py in self._py_cache:
            return self._py_cache[py]
        found: tuple[str, int] | None = None
        cursor, hops = py, 0
        while cursor >= 0 and hops < 512:
            parsed = parse_frame(self.trace.python[cursor].name)
            if parsed is not None and not is_library(parsed[0]):
                found = (parsed[0], parsed[1])
                break
            cursor = self.nest.py_parent[cursor]
            hops += 1
        self._py_cache[py] = found
        return found

    def of_op(self, i: int) -> tuple[str | None, int | None]:
        """File and line of op ``i`` (each None when unknown)."""
        if i < 0:
            return None, None
        mark = self._marker(self.nest.op_ann[i])
        if mark is not None:
            return mark
        py = self._python(self.nest.op_py[i])
        if py is not None:
            return py
        if not self.has_call_stacks:
            return None, None
        # An op's own Call stack, or that of the nearest enclosing op that has one.
        found = self._stack_cache.get(i)
        if found is None:
            found = (None, None)
            j, hops = i, 0
            while j >= 0 and hops < 64:
                cs = _from_call_stack(self.trace.ops[j].args)
                if cs is not None:
                    found = cs
                    break
                j = self.nest.op_parent[j]
                hops += 1
            self._stack_cache[i] = found
        return found

    def of_annotation(self, a: int) -> tuple[str | None, int | None]:
        """File and line of annotation ``a``: a marker around it, its Python frame, its own
        ``Call stack`` (legacy traces record one for ``record_function`` blocks too)."""
        if a < 0:
            return None, None
        mark = self._marker(a)
        if mark is not None:
            return mark
        py = self._python(self.nest.ann_py[a])
        if py is not None:
            return py
        cs = _from_call_stack(self.trace.annotations[a].args)
        if cs is not None:
            return cs
        return self.of_op(self.nest.ann_op[a])

    def of_runtime(self, r: int) -> tuple[str | None, int | None]:
        """File and line of runtime call ``r`` (through its marker, frame or op)."""
        if r < 0:
            return None, None
        mark = self._marker(self.nest.rt_ann[r])
        if mark is not None:
            return mark
        py = self._python(self.nest.rt_py[r])
        if py is not None:
            return py
        return self.of_op(self.nest.rt_op[r])
