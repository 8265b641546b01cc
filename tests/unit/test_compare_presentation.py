"""Sweep arguments and call templates; the comparison as the editor shows it (no torch)."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from lsprotocol import types

from torchscope.analysis import Finding
from torchscope.analysis.multi.comparison import (
    CompareError,
    CompareSide,
    CompareVerdict,
    Comparison,
    CompiledInfo,
    CopyRow,
    Graph,
    OpChanges,
    SideVerdict,
)
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.sweep import (
    SweepSpecError,
    choose_template,
    parse_sweep,
    substitute,
    suggest_template,
)
from torchscope.lsp.compare_presentation import compare_diagnostic, compare_hover, lens_title
from torchscope.source.targets import function_named

SOURCE = """import torch

# torchscope: fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))
def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)


# torchscope: g(torch.randn(3, 64, 64))
def g(x):
    return x
"""


def test_parse_sweep() -> None:
    assert parse_sweep("N=1024, 64,256,64") == ("N", [64, 256, 1024])
    assert parse_sweep(" batch = 1,8 ") == ("batch", [1, 8])
    for bad in ("64,256", "N=", "N=8,0", "N=8,x", "1N=8", "N=" + ",".join(map(str, range(1, 40)))):
        with pytest.raises(SweepSpecError):
            parse_sweep(bad)


def test_templates() -> None:
    assert (
        substitute("fn(torch.randn({N}, {N}), {'a': 1})", "N", 64)
        == "fn(torch.randn(64, 64), {'a': 1})"
    )
    assert suggest_template("fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8))") == (
        "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}))"
    )
    assert (
        suggest_template("g(torch.randn(3, 64, 64), scale=0.5)", "B")
        == "g(torch.randn(3, {B}, {B}), scale=0.5)"
    )
    assert suggest_template("g(x)") is None


def test_the_template_must_be_given_and_hold_the_placeholder() -> None:
    fn = function_named(SOURCE, "m.py", "fn")
    assert choose_template(fn, " fn(torch.randn({N})) ", "N", False) == "fn(torch.randn({N}))"
    with pytest.raises(ProfileFailure, match=r"--call 'fn\(torch\.randn\(\{N\}, \{N\}\)"):
        choose_template(fn, None, "N", False)
    with pytest.raises(
        ProfileFailure, match=r"no \{N\} placeholder.*e\.g\. fn\(torch\.randn\(\{N\}"
    ):
        choose_template(fn, "fn(torch.randn(8, 8), w, b)", "N", False)
    g = function_named(SOURCE, "m.py", "g")
    with pytest.raises(ProfileFailure, match=r"--call 'g\(torch\.randn\(3, \{N\}, \{N\}\)\)'"):
        choose_template(g, None, "N", False)


def _side(median_us: float, cpu_us: float, op_count: float, cold_us: float, **more: Any) -> CompareSide:
    copies = more.pop("copies", [])
    return CompareSide(
        median_us=median_us, min_us=median_us, max_us=median_us, cold_us=cold_us,
        calls_timed=100, cpu_us=cpu_us, profiled_us=cpu_us, device_us=0.0, launches=0.0,
        copies=copies, copy_count=float(len(copies)), copy_bytes=sum(c.bytes for c in copies),
        op_count=op_count, ops=[], verdict=SideVerdict("overhead-bound", "…"), **more,
    )


BIAS = CopyRow("cpu", "aten::copy_", "aten::addmm", 1.0, 16384.0, 2.0)
GRAPH = Graph("fd447jibbsda7oah", "/tmp/torchinductor_u/yi/cyic.py")
COMPARE = Comparison(
    mode="default",
    eager=_side(9.0, 20.0, 6.0, 900.0),
    compiled=_side(
        30.3, 60.0, 5.0, 3.2e6, copies=[BIAS],
        compiled=CompiledInfo(3.2, [GRAPH], 0, [], []),
        trace_path="/traces/fn.compiled.json.gz",
    ),
    changes=OpChanges([], [], "aten::matmul + aten::mm + aten::add → aten::addmm + aten::copy_"),
    verdict=CompareVerdict(
        "keep-eager",
        "torch.compile: 3.4× slower per call (9.0 µs → 30 µs), adds a 16.0 KiB bias copy; keep eager",
        3.37,
        0.05,
    ),
    findings=[Finding("compile-copy", "information", "torch.compile adds a 16.0 KiB host bias copy", 2.0)],
)


def test_the_hover_links_the_compiled_graph_to_its_generated_code() -> None:
    text = compare_hover(COMPARE)
    assert text.startswith("**torch.compile** (mode=default) · torch.compile: 3.4× slower")
    assert "| time per call (unprofiled) | 9.0 µs | 30 µs |" in text
    assert "1× 16.0 KiB cpu in `aten::addmm`" in text
    assert "`aten::matmul + aten::mm + aten::add → aten::addmm + aten::copy_`" in text
    assert "`## Call CompiledFxGraph fd447jibbsda… ##`" in text
    link = text.split("[open the generated code (cyic.py)](command:torchscope.openGeneratedCode?")[
        1
    ]
    argument = json.loads(urllib.parse.unquote(link.split(")")[0]))
    assert argument == [{"path": "/tmp/torchinductor_u/yi/cyic.py"}]
    assert "command:torchscope.openTrace?" in text


def test_the_lens_and_the_diagnostic() -> None:
    assert lens_title(COMPARE) == "torch.compile: keep eager (3.4× slower compiled)"
    assert lens_title(None) is None
    rng = types.Range(
        start=types.Position(line=4, character=0), end=types.Position(line=4, character=3)
    )
    diagnostic = compare_diagnostic(COMPARE, rng, "file:///m.py", "fn")
    assert diagnostic.code == "keep-eager"
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    assert COMPARE.verdict is not None and diagnostic.message == COMPARE.verdict.headline
    assert [r.message for r in diagnostic.related_information or []] == [
        "compile-copy: torch.compile adds a 16.0 KiB host bias copy"
    ]


def test_a_failed_compile_shows_the_compiler_error() -> None:
    failed = Comparison(
        mode="default",
        eager=COMPARE.eager,
        error=CompareError(
            "compile-failed",
            "torch.compile(mode='default') failed in the first compiled call: "
            "InductorError: InvalidCxxCompiler: No working C++ compiler found\nline 2",
        ),
    )
    assert lens_title(failed) == "torch.compile failed (eager shown) · retry"
    rng = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
    )
    diagnostic = compare_diagnostic(failed, rng, "file:///m.py", "fn")
    assert diagnostic.code == "compile-failed"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert "No working C++ compiler found — the eager profile is shown" in diagnostic.message
    text = compare_hover(failed)
    assert "failed — the eager numbers above stand" in text and "line 2" in text
