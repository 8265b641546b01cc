"""What every fix needs from the source: the function's node, the module's import aliases,
edits that leave the rest of the file byte-identical, and where a name is read.

Edits are character ranges of the original text (from the AST's line and UTF-8 column
offsets) replaced by new text, usually ``ast.unparse`` of a new expression: the statements a
fix does not touch keep their formatting and comments, so the patch is the change alone.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from ..targets import FunctionNode, walk_functions


class FixError(Exception):
    """The fix cannot rewrite this function (the message says why)."""


@dataclass(frozen=True)
class Edit:
    """Replace characters ``start``..``end`` of the original text with ``text``."""

    start: int
    end: int
    text: str


class SourceText:
    """The file's text with AST positions turned into character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._starts: list[int] = []
        offset = 0
        for line in self.lines:
            self._starts.append(offset)
            offset += len(line)
        self._starts.append(offset)

    def offset(self, lineno: int, col_bytes: int) -> int:
        """The character offset of (1-based line, UTF-8 byte column)."""
        line = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        col = len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
        return self._starts[lineno - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def indent_of(self, node: ast.stmt) -> str:
        line = self.lines[node.lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    def replace(self, node: ast.AST, text: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, text)

    def delete_statement(self, node: ast.stmt) -> Edit:
        """Remove a statement that has its lines to itself (its whole lines go, with a
        comment at its end)."""
        start, end = self.span(node)
        line_start = self._starts[node.lineno - 1]
        assert node.end_lineno is not None
        line_end = self._starts[node.end_lineno]
        after = self.text[end:line_end].strip()
        if self.text[line_start:start].strip() or (after and not after.startswith("#")):
            raise FixError(f"line {node.lineno} holds more than one statement")
        return Edit(line_start, line_end, "")

    def insert_after(self, node: ast.stmt, lines: list[str], indent: str) -> Edit:
        """New statements on their own lines right after ``node``'s last line."""
        assert node.end_lineno is not None
        at = self._starts[node.end_lineno]
        newline = "" if self.text[:at].endswith("\n") or not self.text[:at] else "\n"
        return Edit(at, at, newline + "".join(f"{indent}{line}\n" for line in lines))

    def apply(self, edits: list[Edit]) -> str:
        """The text with every edit made (edits must not overlap)."""
        out = self.text
        last = len(out) + 1
        for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            if edit.end > last:
                raise FixError("overlapping edits")
            out = out[: edit.start] + edit.text + out[edit.end :]
            last = edit.start
        return out


def find_function(tree: ast.Module, qualname: str) -> Optional[FunctionNode]:
    """The ``def`` whose qualified name is ``qualname`` (``Class.method``, ``f.<locals>.g``),
    found by the targets' own walker."""
    return next((node for name, node, _ in walk_functions(tree) if name == qualname), None)


class Aliases:
    """The module's names for torch, ``torch.nn.functional`` and ``math``: a dotted name in
    the code (``F.softmax``) reads as its full name (``torch.nn.functional.softmax``)."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def full(self, node: ast.expr) -> Optional[str]:
        """``F.softmax`` → ``torch.nn.functional.softmax``; None for anything but a dotted
        name whose first part is imported."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        return ".".join([self.names[node.id], *reversed(parts)])

    def spelling(self, full: str) -> Optional[str]:
        """How this module can write ``full`` (``torch.nn.functional.x`` → ``F.x``)."""
        best: Optional[str] = None
        for local, target in self.names.items():
            if full == target or full.startswith(target + "."):
                candidate = local + full[len(target) :]
                if best is None or len(candidate) < len(best):
                    best = candidate
        return best


def loads(node: ast.AST, name: str) -> int:
    """How many times ``name`` is read inside ``node``."""
    return sum(
        1
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    )


def stores(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
        for n in ast.walk(node)
    )


def blocks(func: FunctionNode) -> Iterator[list[ast.stmt]]:
    """Every statement list in the function (its body, loop bodies, branches, ``with``…),
    not those of nested functions or classes."""
    stack: list[list[ast.stmt]] = [func.body]
    while stack:
        block = stack.pop()
        yield block
        for stmt in block:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    stack.append(inner)
            for handler in getattr(stmt, "handlers", []):
                stack.append(handler.body)


class Chain:
    """Follows a name back to the one assignment it reads, in the same block, when that
    assignment is read nowhere else: such a statement can be folded into the expression that
    reads it (and deleted). ``consumed`` lists the statements folded so far."""

    def __init__(self, func: FunctionNode, block: list[ast.stmt]) -> None:
        self.block = block
        self.consumed: set[int] = set()
        self._all: Counter[str] = Counter(
            n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        )
        self._in_block: Counter[str] = Counter(
            n.id
            for stmt in block
            for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        )

    def follow(self, node: ast.expr, at: int) -> tuple[ast.expr, int]:
        """``node`` (read by statement ``at``), with names folded back to their values."""
        while isinstance(node, ast.Name):
            j = self._definition(node.id, at)
            if j is None:
                break
            value = self.block[j].value  # type: ignore[attr-defined]
            self.consumed.add(j)
            node, at = value, j
        return node, at

    def _definition(self, name: str, at: int) -> Optional[int]:
        block = self.block
        for j in range(at - 1, -1, -1):
            if stores(block[j], name):
                break
        else:
            return None
        stmt = block[j]
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return None
        if any(loads(s, name) for s in block[j + 1 : at]) or loads(block[at], name) != 1:
            return None
        redefined = isinstance(block[at], ast.Assign) and stores(block[at], name)
        if not redefined:
            if any(loads(s, name) for s in block[at + 1 :]):
                return None
            if self._all[name] != self._in_block[name]:
                return None
        # The value must mean the same at ``at``: none of the names it reads reassigned since.
        read = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        if any(stores(s, r) for s in block[j + 1 : at] for r in read):
            return None
        return j


def submodules(tree: ast.Module, func: FunctionNode, aliases: Aliases) -> dict[str, ast.Call]:
    """The modules the class of ``func`` builds in its methods, by attribute:
    ``self.attend = nn.Softmax(dim=-1)`` gives ``{"attend": <the nn.Softmax(...) call>}``,
    where the called name is a dotted name of an imported module (``aliases.full`` reads it)."""
    owner = next(
        (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and func in node.body),
        None,
    )
    found: dict[str, ast.Call] = {}
    if owner is None:
        return found
    for method in owner.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(method):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and isinstance(value, ast.Call)
                and aliases.full(value.func) is not None
            ):
                found[target.attr] = value
    return found
