"""Which layer may say what (issue 44), read from the sources: each check fails on a module
that crosses the line."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "server" / "torchscope"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (under ``TYPE_CHECKING`` too)."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_version_is_a_leaf_the_faces_import() -> None:
    version = PACKAGE / "_version.py"
    assert _imported(version) == set()
    assert re.search(r'^__version__ = "([^"]+)"$', version.read_text(), re.M)
    pyproject = re.search(r'^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert pyproject and f'__version__ = "{pyproject.group(1)}"' in version.read_text()
    for path in sorted(PACKAGE.rglob("*.py")):
        assert "torchscope.__version__" not in _imported(path), path


def test_no_job_kind_analyses_a_trace_in_the_host() -> None:
    """Every job's trace goes to the analysis child (``host/trace_analysis.py``)."""
    for path in sorted((PACKAGE / "host").glob("*_run.py")):
        calls = [
            node
            for node in ast.walk(_tree(path))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("analyze_trace", "analyze")
        ]
        assert not calls, f"{path.name}:{calls[0].lineno} analyses a trace in the host"


def test_host_speaks_no_face_s_words() -> None:
    """No ``cli_report`` in host (``report/`` renders every outcome; the CLI prints it), and
    the job kinds import no presentation."""
    for path in sorted((PACKAGE / "host").glob("*.py")):
        names = {
            node.name
            for node in ast.walk(_tree(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        assert not names & {"cli_report", "CliReport"}, path
    for path in sorted((PACKAGE / "host").glob("*_run.py")):
        crossing = [m for m in _imported(path) if m.startswith("torchscope.report")]
        assert not crossing, (path.name, crossing)


def test_one_module_builds_the_profiler() -> None:
    """Every face gets its ``Profiler`` from ``host/session.py``."""
    building = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if any(
            isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Profiler"
            for node in ast.walk(_tree(path))
        )
    )
    assert building == ["host/session.py"]


def test_the_notebook_imports_no_cli() -> None:
    """The ``%torchscope`` magic's flags come from ``torchscope/flags.py`` and its text report
    from ``report/``, as the CLI's do."""
    for path in sorted((PACKAGE / "notebook").glob("*.py")):
        crossing = [m for m in _imported(path) if m.startswith("torchscope.cli")]
        assert not crossing, (path.name, crossing)


def test_the_sweep_loop_is_the_hosts() -> None:
    """The notebook's ``--sweep`` runs ``host/sweep.py``'s loop (its jobs in-process, through
    the ``Executor`` seam): it builds no points and finds no crossover itself."""
    loop_parts = {"failed_point", "point_from_report", "crossover"}
    for path in sorted((PACKAGE / "notebook").glob("*.py")):
        names = {m.rsplit(".", 1)[-1] for m in _imported(path)}
        assert not names & loop_parts, (path.name, names & loop_parts)


def test_report_imports_no_host() -> None:
    """``report/`` renders outcomes through ``report/outcomes.py``'s protocols: no import of
    ``host/``, not even for type checking."""
    for path in sorted((PACKAGE / "report").glob("*.py")):
        crossing = [m for m in _imported(path) if m.startswith("torchscope.host")]
        assert not crossing, (path.name, crossing)


def test_the_analysis_is_laid_out_by_stage() -> None:
    """``analysis/`` holds its stages as packages (index/, measure/, verdict/, then rules/ and
    multi/), with the engine, the result types and the units on top (issue 43)."""
    analysis = PACKAGE / "analysis"
    on_top = sorted(p.name for p in analysis.glob("*.py"))
    assert on_top == ["__init__.py", "engine.py", "formatting.py", "results.py"]
    stages = sorted(p.name for p in analysis.iterdir() if (p / "__init__.py").is_file())
    assert stages == ["index", "measure", "multi", "rules", "verdict"]


def test_the_source_rewrites_live_beside_the_targets_with_one_walker() -> None:
    """``source/`` holds ``targets.py`` and the fixes; functions are found by one walker
    (``targets.walk_functions``): no other module walks ``ast`` bodies for ``def``s by name."""
    source = PACKAGE / "source"
    assert (source / "targets.py").is_file() and (source / "fixes" / "__init__.py").is_file()
    assert not (PACKAGE / "targets.py").exists() and not (PACKAGE / "analysis" / "fixes").exists()
    walkers = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef)
        and "<locals>" in ast.unparse(node)
        and "ClassDef" in ast.unparse(node)
    )
    assert walkers == ["source/targets.py"], walkers


def test_the_context_is_built_once_and_never_assigned() -> None:
    """``Context`` is frozen, and no module assigns a field of a context (``ctx.x = …``)."""
    from torchscope.analysis.index.context import Context

    assert Context.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        for node in ast.walk(_tree(path)):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    assert target.value.id not in {"ctx", "context"}, (path, node.lineno)


def test_only_the_engine_runs_the_single_trace_rules() -> None:
    """``rules/`` holds the rules over one trace, and only ``engine`` imports it; the rules
    over a comparison and over ranks live beside their analyses in ``multi/``, and the two
    packages import neither way (issue 43)."""
    graph = _module_graph()
    rules, multi = "torchscope.analysis.rules", "torchscope.analysis.multi"
    importing = sorted(
        module
        for module, targets in graph.items()
        if not module.startswith(rules) and any(t.startswith(rules) for t in targets)
    )
    assert importing == ["torchscope.analysis.engine"]
    assert not [
        module
        for module, targets in graph.items()
        if module.startswith(rules) and any(t.startswith(multi) for t in targets)
    ]


def test_every_family_of_plugins_is_an_explicit_list() -> None:
    """Rules, fixes, LSP handlers, job kinds and subcommands are listed, not found by scanning
    a folder (issue 43: one way to register a plugin); each list holds every module of its
    family."""
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "pkgutil" not in text and "iter_modules" not in text, path
        assert "os.listdir(os.path.dirname(__file__))" not in text, path
    from torchscope.analysis.engine import ALL_RULES
    from torchscope.lsp.wiring import HANDLERS
    from torchscope.source.fixes import FIXES

    def modules(folder: Path, skip: set[str]) -> set[str]:
        return {p.stem for p in folder.glob("*.py")} - skip - {"__init__"}

    rules = modules(PACKAGE / "analysis" / "rules", {"base", "_common", "matmul_common"})
    assert {type(r).__module__.rsplit(".", 1)[1] for r in ALL_RULES} == rules
    fixes = modules(PACKAGE / "source" / "fixes", {"base", "_source", "offers", "trial"})
    assert {type(f).__module__.rsplit(".", 1)[1] for f in FIXES} == fixes
    commands = {p.stem for p in (PACKAGE / "lsp").glob("*_command.py")}
    assert commands <= {m.__name__.rsplit(".", 1)[1] for m in HANDLERS}


def _module_graph() -> dict[str, set[str]]:
    """Module → the torchscope modules it imports, at any depth, ``TYPE_CHECKING`` blocks
    included; a package's edges to its own descendants (its face) are left out."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                found.update(filter(None, (known(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - (node.level - 1)]
                    name = ".".join([*base, node.module] if node.module else base)
                else:
                    name = node.module or ""
                for alias in node.names:
                    target = known(f"{name}.{alias.name}")
                    found.add(target if target and target != module else known(name) or "")
        graph[module] = {t for t in found if t and t != module and not t.startswith(module + ".")}
    return graph


def test_no_import_circle_not_even_for_types() -> None:
    """No module reaches itself through imports, ``TYPE_CHECKING`` ones included (issue 43:
    the Report's parts live in ``analysis/measure/parts.py``, a leaf)."""
    graph = _module_graph()
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circle = [*path[path.index(target) :], target]
                raise AssertionError("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


#: What code outside ``analysis/`` may import of it: the package (its face), the engine, the
#: result types and the units.
ANALYSIS_FACE = {
    "torchscope.analysis",
    "torchscope.analysis.engine",
    "torchscope.analysis.results",
    "torchscope.analysis.formatting",
}


def _in_analysis(module: str) -> bool:
    return module == "torchscope.analysis" or module.startswith("torchscope.analysis.")


def test_outside_code_reaches_the_analysis_through_its_face() -> None:
    """Outside ``analysis/``, a module imports only ``ANALYSIS_FACE`` of it (at any depth,
    ``TYPE_CHECKING`` included); what it needs of a stage is re-exported by the package."""
    graph = _module_graph()
    crossing = sorted(
        (module, target)
        for module, targets in graph.items()
        if not _in_analysis(module)
        for target in targets
        if _in_analysis(target) and target not in ANALYSIS_FACE
    )
    assert not crossing, crossing


def test_the_face_re_exports_lazily_what_it_declares() -> None:
    """``analysis/__init__.py``'s ``_LAZY`` table names what its ``TYPE_CHECKING`` block
    imports (for mypy), each name resolves to its stage's object and is in ``__all__``."""
    import importlib

    import torchscope.analysis as face

    declared: dict[str, tuple[str, str]] = {}
    for node in ast.walk(_tree(PACKAGE / "analysis" / "__init__.py")):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom):
                    module = "." * inner.level + (inner.module or "")
                    for alias in inner.names:
                        declared[alias.asname or alias.name] = (module, alias.name)
    lazy: dict[str, tuple[str, str]] = face._LAZY
    assert declared == lazy
    assert set(lazy) <= set(face.__all__)
    for name, (module, attribute) in lazy.items():
        stage = importlib.import_module(module, face.__name__)
        assert getattr(face, name) is getattr(stage, attribute), name


def test_importing_the_analysis_loads_no_multi_trace_machinery() -> None:
    """``torchscope analyze`` imports the package: the rank pool and the comparison of two
    runs load only when a name of theirs is asked for."""
    code = "import sys, torchscope.analysis; print(*sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    modules = set(done.stdout.split())
    assert "torchscope.analysis.engine" in modules
    assert not modules & {"torchscope.analysis.multi.ranks", "torchscope.analysis.multi.compare"}
