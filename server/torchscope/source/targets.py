"""Find the function to profile in source text, without importing it.

The daemon and the CLI use this to turn "line 12 of this file" or ``file.py::Class.method`` into
a qualified name, its ``def`` line, its parameters and its ``# torchscope:`` directives. It only
parses (``ast``), so it is safe in the daemon: the user's code never runs here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from torchscope.files import SOURCE_LIMIT, Refused, read_regular

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
#: What holds statements besides functions and classes (``match`` cases from Python 3.10).
_BLOCKS: tuple[type, ...] = (
    ast.stmt,
    ast.excepthandler,
    *([ast.match_case] if hasattr(ast, "match_case") else []),
)

#: ``# torchscope: fn(torch.randn(8, 8))`` or ``# torchscope[cuda]: fn(...)`` — the bracket
#: names a condition: ``cuda`` directives only run where the worker reports a GPU. It may also
#: hold ``nproc=N`` (``# torchscope[nproc=2]: …``, ``# torchscope[cuda, nproc=8]: …``): run the
#: call on N ranks under torchrun (docs/multi-process.md).
DIRECTIVE_RE = re.compile(
    r"^\s*#\s*torchscope(?:\[(?P<options>[a-z0-9=,\s]+)\])?\s*:\s*(?P<call>.+?)\s*$"
)
_NPROC_RE = re.compile(r"^nproc\s*=\s*(?P<n>[0-9]+)$")

KNOWN_CONDITIONS = ("cuda",)


class TargetError(Exception):
    """The file or the function cannot be profiled as asked; the message says why and what to do."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional_only | positional | var_positional | keyword | var_keyword
    has_default: bool


@dataclass(frozen=True)
class Directive:
    call: str
    line: int  # 1-based line of the comment
    condition: Optional[str] = None
    nproc: Optional[int] = None
    """``nproc=N`` in the bracket: profile on N ranks (None: one process)."""


@dataclass(frozen=True)
class Target:
    """A function found in a file: enough to ask the worker to profile it."""

    file: str
    qualname: str
    def_line: int  # 1-based line of the ``def`` keyword
    first_line: int  # 1-based, including decorators
    end_line: int
    params: tuple[Param, ...]
    directives: tuple[Directive, ...] = field(default=())
    is_method: bool = False
    is_async: bool = False

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def needs_call(self) -> bool:
        """True when the function cannot be called as ``fn()``: a call expression is needed."""
        if self.is_method:
            return True
        return any(
            not p.has_default and p.kind in ("positional_only", "positional", "keyword")
            for p in self.params
        )

    def directive_for(self, cuda_available: bool) -> Optional[Directive]:
        """The first directive that applies on this machine."""
        for directive in self.applicable_directives(cuda_available):
            return directive
        return None

    def applicable_directives(self, cuda_available: bool) -> list[Directive]:
        return [d for d in self.directives if d.condition != "cuda" or cuda_available]


def parse_spec(spec: str) -> tuple[Path, str]:
    """Split ``path/to/file.py::Qual.name`` into its parts."""
    path, sep, qualname = spec.rpartition("::")
    if not sep or not path or not qualname:
        raise TargetError(
            f"target {spec!r} is not FILE::FUNCTION — write e.g. examples/matmul_add.py::fn "
            "or model.py::Model.forward"
        )
    return Path(path), qualname


def read_source(path: Path) -> str:
    """The saved source of ``path``: a regular file of at most ``files.SOURCE_LIMIT``
    bytes (a FIFO, a device, a folder or a huge file is one message, before it is read), as
    Python reads it (universal newlines)."""
    try:
        data = read_regular(path, SOURCE_LIMIT, "Python source file")
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except Refused as exc:
        raise TargetError(str(exc)) from None
    except FileNotFoundError:
        raise TargetError(f"{path}: no such file — check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"{path}: cannot be read as UTF-8 Python source ({exc})") from None


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        where = f"{filename}:{exc.lineno}" if exc.lineno else filename
        raise TargetError(
            f"{where}: syntax error: {exc.msg} — fix it before profiling", line=exc.lineno
        ) from None


def walk_functions(
    node: ast.AST, prefix: str = "", in_class: bool = False
) -> list[tuple[str, FunctionNode, bool]]:
    """Every function with its qualified name, as Python's ``__qualname__`` spells it, and
    whether it is a method: the one walker of the user's source (targets and fixes)."""
    found: list[tuple[str, FunctionNode, bool]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = f"{prefix}{child.name}"
            found.append((qualname, child, in_class))
            found.extend(walk_functions(child, f"{qualname}.<locals>.", False))
        elif isinstance(child, ast.ClassDef):
            found.extend(walk_functions(child, f"{prefix}{child.name}.", True))
        elif isinstance(child, _BLOCKS):
            # Defs inside if/try/except/with/for/while/match blocks keep the same prefix.
            found.extend(walk_functions(child, prefix, in_class))
    return found


def _params(node: FunctionNode, is_method: bool) -> tuple[Param, ...]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    n_defaults = len(args.defaults)
    params: list[Param] = []
    for index, arg in enumerate(positional):
        kind = "positional_only" if index < len(args.posonlyargs) else "positional"
        has_default = index >= len(positional) - n_defaults
        params.append(Param(arg.arg, kind, has_default))
    if args.vararg:
        params.append(Param(args.vararg.arg, "var_positional", True))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(arg.arg, "keyword", default is not None))
    if args.kwarg:
        params.append(Param(args.kwarg.arg, "var_keyword", True))
    if is_method and params and not _is_static(node):
        params = params[1:]  # self / cls is supplied by the receiver
    return tuple(params)


def _is_static(node: FunctionNode) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _directives(lines: list[str], first_line: int) -> tuple[Directive, ...]:
    """Directive comments in the contiguous comment block directly above the function."""
    found: list[Directive] = []
    index = first_line - 2  # 0-based index of the line above the def/decorators
    while index >= 0 and lines[index].lstrip().startswith("#"):
        match = DIRECTIVE_RE.match(lines[index])
        if match:
            found.append(_directive(match["call"], index + 1, match["options"]))
        index -= 1
    found.reverse()
    return tuple(found)


def _directive(call: str, line: int, options: Optional[str]) -> Directive:
    """A directive from its bracket's items: a condition word and/or ``nproc=N``."""
    condition: Optional[str] = None
    nproc: Optional[int] = None
    for item in (options or "").split(","):
        item = item.strip()
        m = _NPROC_RE.match(item)
        if m:
            nproc = int(m["n"]) or None
        elif item:
            condition = item
    return Directive(call, line, condition, nproc)


def _target(
    file: str, lines: list[str], qualname: str, node: FunctionNode, in_class: bool
) -> Target:
    first_line = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    is_method = in_class and not _is_static(node)
    return Target(
        file=file,
        qualname=qualname,
        def_line=node.lineno,
        first_line=first_line,
        end_line=node.end_lineno or node.lineno,
        params=_params(node, in_class),
        directives=_directives(lines, first_line),
        is_method=is_method,
        is_async=isinstance(node, ast.AsyncFunctionDef),
    )


def list_functions(source: str, file: str) -> list[Target]:
    """All functions in the file, outermost first."""
    tree = _parse(source, file)
    lines = source.splitlines()
    return [_target(file, lines, q, n, c) for q, n, c in walk_functions(tree, "", False)]


def function_at(source: str, file: str, line: int) -> Optional[Target]:
    """The innermost function whose decorators, ``def`` or body contain ``line`` (1-based)."""
    best: Optional[Target] = None
    for target in list_functions(source, file):
        if target.first_line <= line <= target.end_line and (
            best is None or target.first_line >= best.first_line
        ):
            best = target
    return best


def function_named(source: str, file: str, qualname: str) -> Target:
    targets = list_functions(source, file)
    for target in targets:
        if target.qualname == qualname:
            return target
    names = ", ".join(t.qualname for t in targets if "<locals>" not in t.qualname) or "none"
    raise TargetError(f"{file}: no function {qualname!r} — functions here: {names}")


def _placeholders(params: tuple[Param, ...]) -> str:
    """``x=…, w=…`` for the required parameters (``…`` alone for a positional-only one)."""
    return ", ".join(
        "…" if p.kind == "positional_only" else f"{p.name}=…"
        for p in params
        if not p.has_default and p.kind in ("positional_only", "positional", "keyword")
    )


def call_example(target: Target) -> str:
    """The call a ``# torchscope:`` directive for ``target`` takes, ``…`` where a real input
    goes: ``fn(x=…, w=…)``. The worker evaluates it in the module's namespace, so a method
    is called on a receiver built from its class (its ``__init__``'s required parameters,
    read from the file): ``Block(config=…).forward(x=…)``, not ``forward(x=…)``, which
    names nothing there."""
    args = _placeholders(target.params)
    if not target.is_method:
        return f"{target.name}({args})"
    cls = target.qualname.rsplit(".", 1)[0]
    try:
        init = _placeholders(function_named(read_source(Path(target.file)), target.file,
                                            f"{cls}.__init__").params)  # fmt: skip
    except TargetError:
        init = ""  # no __init__ of its own (or the file moved): the class takes none we know
    return f"{cls}({init}).{target.name}({args})"


def read_target(spec: str, root: Optional[Path] = None) -> tuple[str, Target]:
    """``FILE::QUALNAME`` read from disk (a relative file under ``root``, default this
    process's folder): the file's source and the function."""
    path, qualname = parse_spec(spec)
    if root is not None:
        path = root / path.expanduser()  # an absolute path stays as it is
    source = read_source(path)
    return source, function_named(source, str(path), qualname)


def target_at(path: Path, line: int) -> tuple[str, Target]:
    """The saved source of ``path`` and the function around its 1-based ``line``."""
    source = read_source(path)
    target = function_at(source, str(path), line)
    if target is None:
        raise TargetError(
            f"line {line} of {path.name} is not inside a function — put the cursor in the def "
            "or body of the function to profile",
            line=line,
        )
    return source, target
