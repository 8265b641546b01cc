"""The tests a program run can start from: what the Python extension's test explorer would list.

VS Code gives no extension access to another extension's test items, so **Profile this
function in a run…** lists the same tests itself (docs/design-notes.md): ``pytest
--collect-only -q`` with the Python extension's settings (``python.testing.pytestArgs``, run
in ``python.testing.cwd`` or the workspace folder), in the workspace's interpreter, in a child
process — collecting imports the test modules, which is user code — under a timeout. The child
and everything it starts carry a marker (``process_tree``) and are killed when it is done, so
nothing is left running. Tests whose file imports the function's module come first; that is
read from the test files' ``import`` statements (``ast``, never run).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import re
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from torchscope.files import SOURCE_LIMIT, read_regular
from torchscope.host import process_tree

#: How long collecting may take before it is stopped (importing torch alone takes seconds).
COLLECT_TIMEOUT_S = 60.0

#: Most tests listed (a pick longer than this is not read anyway).
MAX_TESTS = 2000

#: A ``--durations`` line (from the project's ``addopts``), not a node id.
_DURATION = re.compile(r"^\d+(\.\d+)?s (setup|call|teardown) ")


class CollectionFailed(Exception):
    """pytest could not collect (or not every test): the message says why; ``tests`` holds
    those it did collect."""

    def __init__(self, message: str, tests: Optional[list[str]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.tests = tests or []


@dataclass(frozen=True)
class CollectedTest:
    """One test: its pytest node id (relative to the folder it was collected in), its file,
    and whether that file imports the function's module."""

    nodeid: str
    file: str
    imports_target: bool


def collect_command(python: str, cwd: Path, args: list[str]) -> list[str]:
    """The collection's command line (``--rootdir``: node ids relative to ``cwd``, as the
    Python extension's are; no ``.pytest_cache`` written)."""
    return [
        python,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rootdir={cwd}",
        *args,
    ]


def node_ids(output: str) -> list[str]:
    """The node ids ``pytest --collect-only -q`` printed, one a line before its summary."""
    found = []
    for line in output.splitlines():
        if not line or line[0].isspace() or "::" not in line or line.startswith(("ERROR", "E ")):
            continue
        if line.startswith(("=", "_", "!")) or _DURATION.match(line):
            continue
        found.append(line.strip())
    return found


def _why(output: str, code: int, python: str) -> str:
    """The one line that says why collecting failed."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    if any("No module named pytest" in line for line in lines):
        return f"pytest is not installed in {python} — install it there (pip install pytest)"
    errors = [line[2:].strip() for line in lines if line.startswith("E ")]
    failed = [line for line in lines if line.startswith("ERROR ")]
    said = "; ".join([*failed[:3], *errors[:1]]) or " / ".join(lines[-3:]) or "no output"
    return f"pytest exited with code {code}: {said}"


async def _run(command: list[str], cwd: Path, timeout_s: float) -> tuple[Optional[int], str]:
    """Run ``command`` in a marked child; (its exit code or None after the timeout, output).
    Whatever it started is killed before this returns."""
    process_tree.become_subreaper()
    marker = process_tree.new_marker()
    env = {**os.environ, process_tree.MARKER_ENV: marker, "PYTHONDONTWRITEBYTECODE": "1"}
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    process_tree.own(process)
    assert process.stdout is not None
    reader = asyncio.ensure_future(process.stdout.read())
    try:
        # not process.wait(): a grandchild holding the pipe would keep it waiting
        await process_tree.wait_exited(process, timeout_s)
    finally:
        code = process.returncode
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # where there is no /proc
        await process_tree.kill_marked(marker)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process_tree.wait_exited(process, 5.0)
    try:
        output = await asyncio.wait_for(reader, 5.0)
    except asyncio.TimeoutError:
        reader.cancel()
        output = b""
    return code, output.decode("utf-8", "replace")


async def collect_tests(
    python: str, cwd: Path, args: list[str], timeout_s: float = COLLECT_TIMEOUT_S
) -> list[str]:
    """The node ids pytest collects in ``cwd`` with ``args``; ``CollectionFailed`` says why
    there are none (or not all)."""
    command = collect_command(python, cwd, args)
    shown = f"`{shlex.join(['pytest', *command[3:5], *args])}` in {cwd}"
    try:
        code, output = await _run(command, cwd, timeout_s)
    except OSError as exc:
        raise CollectionFailed(
            f"cannot run {python} to collect the tests ({exc}) — set the interpreter "
            "(torchscope.pythonPath)"
        ) from exc
    if code is None:
        raise CollectionFailed(
            f"collecting the tests with {shown} took over {timeout_s:g} s and was stopped — "
            "narrow python.testing.pytestArgs, or type the test as the command line"
        )
    tests = node_ids(output)[:MAX_TESTS]
    if code not in (0, 5):  # 5: no tests collected
        raise CollectionFailed(
            f"could not collect the tests with {shown}: {_why(output, code, python)}", tests
        )
    return tests


def _module_names(target_file: Path) -> set[str]:
    """The dotted names the file can be imported by: ``model``, ``pkg.model``, … (a package's
    ``__init__.py`` by the package's name)."""
    parts = list(target_file.with_suffix("").parts[1:])
    if parts and parts[-1] == "__init__":
        parts.pop()
    return {".".join(parts[i:]) for i in range(len(parts))}


def _imported(tree: ast.Module, test_file: Path) -> set[str]:
    """The modules a file imports, as dotted names, or as paths (``/…/pkg/model``) for
    relative imports; ``from a import b`` counts as ``a`` and ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # ``from .model import x``: level 1 is the test's own folder
                parents = test_file.parents
                folder = parents[min(node.level, len(parents)) - 1]
                base = str(folder / base.replace(".", "/")) if base else str(folder)
                found.update(f"{base}/{alias.name}" for alias in node.names)
            else:
                found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return found


def imports_module(test_file: Path, target_file: Path) -> bool:
    """Whether ``test_file`` is ``target_file`` or imports it (unreadable files: no)."""
    if test_file.resolve() == target_file.resolve():
        return True
    try:
        tree = ast.parse(read_regular(test_file, SOURCE_LIMIT, "test file"))  # no FIFO or device
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    target = target_file.resolve()
    names = _module_names(target)
    by_path = str(target.parent if target.name == "__init__.py" else target.with_suffix(""))
    return any(name in names or name == by_path for name in _imported(tree, test_file.resolve()))


def rank_tests(node_ids: list[str], cwd: Path, target_file: Path) -> list[CollectedTest]:
    """The tests, those whose file imports the function's module first (otherwise in
    pytest's order)."""
    files: dict[str, bool] = {}
    tests = []
    for nodeid in node_ids:
        file = str((cwd / nodeid.split("::", 1)[0]).resolve())
        if file not in files:
            files[file] = imports_module(Path(file), target_file)
        tests.append(CollectedTest(nodeid, file, files[file]))
    return sorted(tests, key=lambda t: not t.imports_target)
