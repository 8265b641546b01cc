"""A fix: a rewrite of one function's source that a finding suggests, measured before it is
offered (``host/fix_run.py``). Each fix is one module of this package ending with
``FIX = YourFix()``; ``fixes/__init__.py`` finds them.

A fix says *where* it applies (``sites``: the lines it would rewrite, empty when it does not
apply), *what* it assumes (``assumes``: the condition under which the rewrite means the same,
which the measurement's output check then tests on the user's inputs), and *how*
(``edits``: character ranges of the file replaced, so the rest stays byte-identical).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from ..targets import FunctionNode
from ._source import Aliases, Edit, FixError, SourceText, find_function

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Site:
    """One place the fix rewrites: its first line in the file, and what it does there."""

    line: int
    what: str


@dataclass(frozen=True)
class Rewrite:
    """The whole file, rewritten; ``lines`` are the original lines the edits touch,
    ``original`` the text it was made from."""

    fix: str
    source: str
    lines: tuple[int, ...]
    assumes: str
    original: str
    conditions: tuple[dict[str, str], ...] = ()
    """What only the running program can tell, checked in the trial's worker
    (``DiffRequest.trial_conditions``)."""
    fallback: Optional[Rewrite] = None
    """The rewrite measured instead when a ``lower-triangular`` condition fails."""
    dropout_off: bool = False
    """The rewrite draws its dropout differently: the check compares with dropout off."""


@dataclass
class Parsed:
    """What a fix reads: the text, its tree, the function's node and the module's aliases."""

    text: SourceText
    tree: ast.Module
    func: FunctionNode
    aliases: Aliases


def parse(source: str, function: str) -> Parsed:
    """Parse ``source`` and find ``function`` (a qualified name); ``FixError`` otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise FixError(f"the file does not parse (line {exc.lineno}: {exc.msg})") from None
    func = find_function(tree, function)
    if func is None:
        raise FixError(f"no function {function!r} in the file")
    return Parsed(SourceText(source), tree, func, Aliases(tree))


class Fix:
    """Subclass per fix: set the class attributes, implement ``plan``."""

    id: str = ""
    title: str = ""
    assumes: str = ""
    #: Rule ids whose findings this fix answers (``fix`` in the report's findings).
    answers: tuple[str, ...] = ()
    #: Devices where the rewrite gains anything; it is offered nowhere else.
    devices: tuple[str, ...] = DEVICES
    #: Conditions every trial of the fix checks in the worker (``Rewrite.conditions``).
    conditions: tuple[dict[str, str], ...] = ()

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        """Each place the fix rewrites with its edits; empty when it does not apply."""
        raise NotImplementedError

    def sites(self, source: str, function: str, device: str) -> list[Site]:
        """Where the fix would rewrite ``function`` on ``device`` (empty: it does not apply)."""
        if device not in self.devices:
            return []
        try:
            return [site for site, _ in self.plan(parse(source, function), device)]
        except FixError:
            return []

    def applies(self, source: str, function: str, device: str) -> bool:
        return bool(self.sites(source, function, device))

    def rewrite(self, source: str, function: str, device: str) -> Optional[Rewrite]:
        """The rewritten file, or None when the fix does not apply."""
        if device not in self.devices:
            return None
        try:
            parsed = parse(source, function)
            return self.rewrite_planned(parsed, self.plan(parsed, device))
        except FixError:
            return None

    def rewrite_planned(
        self, parsed: Parsed, planned: list[tuple[Site, list[Edit]]]
    ) -> Optional[Rewrite]:
        """The rewrite ``planned`` makes of the parsed file (None: nothing planned); raises
        ``FixError`` when its edits overlap."""
        if not planned:
            return None
        new = parsed.text.apply([edit for _, site_edits in planned for edit in site_edits])
        lines = tuple(sorted({site.line for site, _ in planned}))
        return Rewrite(self.id, new, lines, self.assumes, parsed.text.text, self.conditions)


def name_of(aliases: Aliases, full: str, fallback: str) -> str:
    """How the module writes ``full`` (``F.scaled_dot_product_attention``), or ``fallback``
    spelled from ``torch``'s alias; ``FixError`` when torch is not imported by name."""
    spelled = aliases.spelling(full)
    if spelled is not None:
        return spelled
    spelled = aliases.spelling(fallback)
    if spelled is None:
        raise FixError("the module does not import torch by name")
    return spelled
