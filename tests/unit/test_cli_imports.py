"""The command line imports what its subcommand needs: ``torchscope analyze TRACE`` reads a
trace without the profiling host, the worker, the language server, the MCP server or asyncio;
the ``cli`` package has one module per subcommand and none imports another."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchscope.cli.analyze import parse_steps

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "server" / "torchscope" / "cli"
TRACE = REPO / "tests" / "data" / "traces" / "hta_triton_kernel_a100.json.gz"
NOT_FOR_ANALYZE = (
    "torchscope.host",
    "torchscope.worker",
    "torchscope.lsp",
    "torchscope.mcp_server",
    "asyncio",
    "dask",
    "distributed",
    "msgpack",  # protocol.py frames messages with it, imported where it frames one
    # The other subcommands: the parser of the one named is all that is built.
    *(f"torchscope.cli.{name}" for name in ("profile", "compare", "run", "diff", "fix")),
    *(f"torchscope.cli.{name}" for name in ("check", "calibrate", "serve", "mcp")),
    *(f"torchscope.cli.{name}" for name in ("attach", "jobs")),
    "torchscope.agent",
)

# The console script's entry point in a fresh interpreter: the exit status, then every
# module it imported (stdout of the command itself goes to a buffer).
_CHILD = """
import contextlib, io, json, sys
from torchscope.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _run_main(*argv: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_analyze_of_one_trace_imports_neither_host_nor_worker_nor_asyncio() -> None:
    result = _run_main("analyze", str(TRACE))
    assert result["status"] == 0
    assert f"trace: {TRACE}" in str(result["out"])
    modules = result["modules"]
    assert isinstance(modules, list)
    assert "torchscope.analysis.engine" in modules  # it did analyse
    loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_FOR_ANALYZE)]
    assert loaded == []


def test_analyze_of_ranks_without_a_scheduler_imports_no_dask(tmp_path: Path) -> None:
    """Dask is imported only where a scheduler is named (``--scheduler``, ``--scheduler-file``,
    ``$DASK_SCHEDULER_ADDRESS``); the local pool needs nothing of it."""
    for name in ("param_dlrm_ddp_v100_rank0.json.gz", "param_dlrm_ddp_v100_rank1.json.gz"):
        shutil.copy(TRACE.parent / name, tmp_path / name)
    result = _run_main("analyze", str(tmp_path))
    assert result["status"] == 0
    modules = result["modules"]
    assert isinstance(modules, list)
    assert "torchscope.analysis.multi.ranks" in modules
    assert [m for m in modules if m.split(".")[0] in ("dask", "distributed")] == []
    assert "torchscope.analysis.multi.rank_cluster" not in modules


def test_no_subcommand_module_imports_another() -> None:
    """Each module of ``cli/`` imports at most ``cli.common`` of its own package (the
    package's ``main`` imports them all)."""
    for path in sorted(CLI.glob("*.py")):
        if path.name == "__init__.py":
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        own = {n for n in names if n == "torchscope.cli" or n.startswith("torchscope.cli.")}
        assert own <= {"torchscope.cli.common"}, f"{path.name} imports {sorted(own)}"


def test_parse_steps() -> None:
    assert parse_steps("10-20") == (10, 20)
    assert parse_steps("7") == (7, 7)
    assert parse_steps(" 3 - 5 ") == (3, 5)
    for bad in ("20-10", "a-b", "-3"):
        with pytest.raises(ValueError):
            parse_steps(bad)
