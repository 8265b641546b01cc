"""Import the user's file as a module — fresh for every job — and find the target in it.

The file is imported under its package-qualified name when it sits inside a package (a chain of
folders with ``__init__.py``), so package-relative imports work; ``__name__`` is never
``"__main__"``, so an ``if __name__ == "__main__":`` block does not run.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional


class TargetNotFound(Exception):
    """The module imported but has no such function; the message lists what it has."""


def module_name_for(path: Path) -> tuple[str, Path]:
    """The dotted module name of ``path`` and the folder that must be on ``sys.path``."""
    parts = [path.stem] if path.stem != "__init__" else []
    folder = path.parent
    while (folder / "__init__.py").exists() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


def forget_modules_under(root: Path) -> list[str]:
    """Drop every imported module whose file lies under ``root``, so edits are picked up."""
    root_str = str(root.resolve()) + os.sep
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or name.split(".")[0] == "torchscope":
            continue
        file = os.path.abspath(file)
        if file.startswith(root_str) and not _is_installed(file):
            del sys.modules[name]
            dropped.append(name)
    importlib.invalidate_caches()
    return dropped


def _is_installed(file: str) -> bool:
    """Installed packages (a ``.venv`` inside the workspace, say) are never re-imported: dropping
    torch from ``sys.modules`` would break it."""
    if os.sep + "site-packages" + os.sep in file or os.sep + "dist-packages" + os.sep in file:
        return True
    prefixes = {os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return any(file.startswith(p) for p in prefixes)


def import_fresh(path: Path, workspace_root: Optional[Path]) -> ModuleType:
    """Import ``path`` after forgetting the workspace's modules (the user may have edited them)."""
    path = path.resolve()
    module_name, search_root = module_name_for(path)
    forget_modules_under(workspace_root or path.parent)
    forget_modules_under(path.parent)
    for entry in (str(search_root), str(workspace_root) if workspace_root else None):
        if entry and entry not in sys.path:
            sys.path.insert(0, entry)
    if module_name in sys.modules:  # a same-named module from elsewhere (e.g. a stdlib name)
        del sys.modules[module_name]
    module = importlib.import_module(module_name)
    loaded_from = getattr(module, "__file__", None)
    if not loaded_from or Path(loaded_from).resolve() != path:
        raise ImportError(
            f"importing {module_name!r} loaded {loaded_from!r} instead of {str(path)!r}: "
            f"another module of that name shadows the file — rename the file"
        )
    return module


def import_source(source: str, path: Path, private_name: str, like: ModuleType) -> ModuleType:
    """Import ``source`` (an earlier version of ``like``'s file, written to ``path``) as the
    module ``private_name``, beside ``like``: both versions coexist. Package-relative imports
    resolve as they do in ``like`` (to today's sibling modules)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    sys.modules.pop(private_name, None)
    spec = importlib.util.spec_from_file_location(private_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    module.__package__ = like.__package__
    sys.modules[private_name] = module  # dataclasses and pickling look the module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(private_name, None)
        raise
    return module


def resolve_qualname(module: ModuleType, qualname: str) -> Any:
    """Walk ``Class.method`` style names; nested functions (``<locals>``) are not reachable."""
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>", 1)[0]
        raise TargetNotFound(
            f"{qualname} is defined inside another function and only exists while it runs — "
            f"profile {outer} instead, or move the function to module level"
        )
    obj: Any = module
    walked = []
    for part in qualname.split("."):
        walked.append(part)
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            available = ", ".join(sorted(n for n in vars(obj) if not n.startswith("_"))[:20])
            raise TargetNotFound(
                f"{module.__name__} has no {'.'.join(walked)} (has: {available or 'nothing'})"
            ) from None
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
    return obj


def unwrap(func: Callable[..., Any]) -> Callable[..., Any]:
    """The innermost function behind decorators that set ``__wrapped__``."""
    unwrapped: Callable[..., Any] = inspect.unwrap(func)
    return unwrapped
