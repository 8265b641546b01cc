"""Find the targets of ``torchscope run`` in the program's code and route their calls through a
hook, before the program runs.

A target file the program has not imported yet is compiled with one more decorator on the
target's ``def`` (``_hook_for(file, qualname)``, placed under ``staticmethod``/``classmethod``):
whatever defines the function — the module body, a class body, an enclosing function each time
it runs, the script itself as ``__main__`` — gets the hooked function. That covers methods,
``nn.Module.forward`` reached through ``__call__``, nested functions and functions under other
decorators (``functools.wraps``). The finder (first on ``sys.meta_path``) does it for imports,
``compile_entry`` for the script. Line numbers are unchanged (the decorator sits on the def's
line), so tracebacks, line markers and reports read the file as it is.

A target in a module that is already imported (an installed package the worker loaded, such as
torch) is patched where it lives instead: its module global or class attribute.
"""

from __future__ import annotations

import ast
import functools
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.source.targets import walk_functions

#: The hook: ``on_call(file, qualname, fn, args, kwargs)`` returns what the call returns.
OnCall = Callable[[str, str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]

_ON_CALL: Optional[OnCall] = None
_LOADED: set[str] = set()  # target files whose code was compiled with the hook
_DESCRIPTORS = ("staticmethod", "classmethod", "property")


def _hook_for(file: str, qualname: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator the rewritten ``def`` carries."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def torchscope_hook(*args: Any, **kwargs: Any) -> Any:
            on_call = _ON_CALL
            if on_call is None:
                return fn(*args, **kwargs)
            return on_call(file, qualname, fn, args, kwargs)

        return torchscope_hook

    return decorate


def _decorator(file: str, qualname: str, node: ast.AST) -> ast.expr:
    text = f"__import__({__name__!r}, fromlist=['_'])._hook_for({file!r}, {qualname!r})"
    expression = ast.parse(text, mode="eval").body
    for child in ast.walk(expression):
        ast.copy_location(child, node)
    return expression


def _add_hooks(tree: ast.Module, file: str, qualnames: Sequence[str]) -> list[str]:
    """Decorate the defs named ``qualnames`` in ``tree``; returns the qualnames found."""
    wanted, found = set(qualnames), []
    for qualname, child, _ in walk_functions(tree):
        if qualname in wanted:
            found.append(qualname)
            first = child.decorator_list[:1]
            descriptor = first and isinstance(first[0], ast.Name) and first[0].id in _DESCRIPTORS
            at = 1 if descriptor else 0
            child.decorator_list.insert(at, _decorator(file, qualname, child))
    return found


class TargetFiles:
    """The files holding targets (resolved paths) → their qualnames."""

    def __init__(self, targets: Sequence[tuple[str, str]]) -> None:
        self.by_file: dict[str, list[str]] = {}
        for file, qualname in targets:
            self.by_file.setdefault(str(Path(file).resolve()), []).append(qualname)

    def compile(self, source: bytes | str, path: str) -> types.CodeType:
        """``path``'s code, with hooks when it holds targets."""
        tree = ast.parse(source, path)
        resolved = str(Path(path).resolve())
        if resolved in self.by_file:
            _add_hooks(tree, resolved, self.by_file[resolved])
            _LOADED.add(resolved)
        return compile(tree, path, "exec", dont_inherit=True)


class _HookedLoader(importlib.machinery.SourceFileLoader):
    files: TargetFiles

    def get_code(self, fullname: str) -> types.CodeType:  # never the cached bytecode
        path = self.get_filename(fullname)
        return self.files.compile(self.get_data(path), path)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, files: TargetFiles) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Any = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        if str(Path(spec.origin).resolve()) not in self.files.by_file:
            return None
        loader = _HookedLoader(fullname, spec.origin)
        loader.files = self.files
        spec.loader = loader
        return spec


def live_attribute(module: Any, qualname: str) -> Optional[tuple[Any, str, Any]]:
    """``(owner, name, raw)``: where ``qualname`` lives in ``module`` (a class's own
    ``__dict__`` entry, so a ``staticmethod`` stays one); None if it is not there."""
    *path, name = qualname.split(".")
    owner: Any = module
    try:
        for part in path:
            owner = getattr(owner, part)
        raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    except (AttributeError, KeyError):
        return None
    return owner, name, raw


def rewrapped(raw: Any, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """``raw`` with ``wrap`` around its function, the same kind of attribute (None: not
    callable)."""
    if isinstance(raw, staticmethod):
        return staticmethod(wrap(raw.__func__))
    if isinstance(raw, classmethod):
        return classmethod(wrap(raw.__func__))
    return wrap(raw) if callable(raw) else None


def _patch_live(module: types.ModuleType, file: str, qualname: str) -> bool:
    """Hook a target of an already imported module where it lives; False if not there."""
    found = live_attribute(module, qualname)
    replacement = rewrapped(found[2], _hook_for(file, qualname)) if found else None
    if found is None or replacement is None:
        return False
    setattr(found[0], found[1], replacement)
    _LOADED.add(file)
    return True


class Hooks:
    """Installs the hooks for one run and takes them out again (``remove``)."""

    def __init__(self, targets: Sequence[tuple[str, str]], on_call: OnCall) -> None:
        self.files = TargetFiles(targets)
        self._finder = _Finder(self.files)
        global _ON_CALL
        _ON_CALL = on_call
        _LOADED.clear()
        sys.meta_path.insert(0, self._finder)
        for module in list(sys.modules.values()):
            origin = getattr(module, "__file__", None)
            resolved = str(Path(origin).resolve()) if origin else ""
            for qualname in self.files.by_file.get(resolved, []):
                _patch_live(module, resolved, qualname)

    def loaded(self, file: str) -> bool:
        """Was ``file``'s code hooked (imported, run as the script, or patched)?"""
        return str(Path(file).resolve()) in _LOADED

    def remove(self) -> None:
        """Calls from now on go straight to the function."""
        global _ON_CALL
        _ON_CALL = None
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
