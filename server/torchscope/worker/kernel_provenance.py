"""Which lines of the profiled file each compiled kernel came from (issue 42).

The compiled side's *profiled* pass compiles the function afresh with two Inductor switches on
(:func:`provenance_switches`): ``cpp.enable_kernel_profile`` names each generated CPU kernel in
the trace (``graph_0_cpp_fused_mul_relu_sum_0``; Triton kernels are named in the trace
anyway), and ``trace.provenance_tracking_level = 1`` makes Inductor keep, on each
``CompiledFxGraph``, the user's stack of every FX node a kernel fused
(``inductor_provenance_stack_traces_str``: ``{"cpp_fused_mul_relu_sum_0:2": ["  File
\"m.py\", line 7, in fn\\n ..."], "extern_kernels.mm:1": [...]}``) and the post-grad nodes
(``inductor_provenance_mapping_str``'s ``cppCodeToPost`` / ``tritonCodeToPost``). The timing
pass never runs with them. :func:`kernel_sources` reads both back; the host matches them to
the trace's kernel events (``analysis/compiled_lines.py``).

Graph breaks are caught from Dynamo's ``graph_breaks`` log (``Graph break in user code at
FILE:LINE`` then ``Graph Break Reason: …``), the only place it names the line.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import re
from collections.abc import Iterator
from typing import Any, Optional

from torchscope.protocol import GraphBreakSite, KernelSource

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
BREAK_AT = re.compile(
    r"Graph break(?: \(user stack suppressed[^)]*\))? in user code at (?P<file>.+):(?P<line>\d+)"
)
REASON_CHARS = 800
NO_PROVENANCE = (
    "this torch has no Inductor kernel profiling or provenance tracking "
    "(torch._inductor.config.cpp.enable_kernel_profile, trace.provenance_tracking_level): "
    "the compiled side is compared per call only, without per-line times"
)


def provenance_supported() -> bool:
    try:
        import torch._inductor.config as config

        return hasattr(config.cpp, "enable_kernel_profile") and hasattr(
            config.trace, "provenance_tracking_level"
        )
    except Exception:
        return False


@contextlib.contextmanager
def provenance_switches(folder: str) -> Iterator[None]:
    """Kernel names in the trace and provenance on, Inductor's cache and debug output in
    ``folder`` (the job's own), for the compile and calls inside; everything restored after."""
    import torch._inductor.config as config

    os.makedirs(folder, exist_ok=True)
    old_env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "cache")
    try:
        with config.patch(
            {
                "cpp.enable_kernel_profile": True,
                "fx_graph_cache": False,  # a cache hit carries the provenance of another graph
                "trace.provenance_tracking_level": 1,
                "trace.debug_dir": os.path.join(folder, "debug"),
            }
        ):
            yield
    finally:
        if old_env is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_env


def _base_name(name: str) -> str:
    """``cpp_fused_relu_0:2`` → ``cpp_fused_relu_0`` (the suffix is Inductor's debug handle)."""
    return name.rsplit(":", 1)[0] if re.search(r":\d+$", name) else name


def _op_name(node: str) -> str:
    """Post-grad node ``sum_1`` → ``sum``."""
    return re.sub(r"_\d+$", "", node)


def _lines_in(traces: list[str], file: str) -> list[int]:
    """The lines of ``file`` in the stacks: each stack's innermost frame in that file (a call
    into a helper elsewhere counts for the calling line, as in eager)."""
    target = os.path.realpath(file)
    lines: set[int] = set()
    for trace in traces:
        found: Optional[int] = None
        for match in FRAME.finditer(trace):
            if os.path.realpath(match["file"]) == target:
                found = int(match["line"])
        if found is not None:
            lines.add(found)
    return sorted(lines)


def _graph_sources(graph: Any, file: str) -> list[KernelSource]:
    key = getattr(graph, "_fx_graph_cache_key", None) or getattr(graph, "cache_key", None)
    stacks_text = getattr(graph, "inductor_provenance_stack_traces_str", None)
    if not isinstance(stacks_text, str):
        return []
    key = str(key)  # None without the FX graph cache, as the trace's annotation says
    stacks: dict[str, list[str]] = json.loads(stacks_text)
    mapping_text = getattr(graph, "inductor_provenance_mapping_str", None)
    mapping: dict[str, Any] = json.loads(mapping_text) if isinstance(mapping_text, str) else {}
    to_post: dict[str, list[str]] = {
        **mapping.get("cppCodeToPost", {}),
        **mapping.get("tritonCodeToPost", {}),
    }
    graph_id = getattr(graph, "fx_kwargs", {}).get("graph_id")
    sources = []
    for name, traces in stacks.items():
        ops = list(dict.fromkeys(_op_name(n) for n in to_post.get(name, [])))
        kernel = _base_name(name)
        extern = kernel.startswith("extern_kernels.")
        lines = _lines_in(traces, file)
        gid = graph_id if isinstance(graph_id, int) else -1
        sources.append(KernelSource(key, kernel, lines, ops, extern, gid))
    return sources


def _compiled_graphs() -> list[Any]:
    return [o for o in gc.get_objects() if type(o).__name__ == "CompiledFxGraph"]


def live_graphs() -> set[int]:
    """The ids of the ``CompiledFxGraph`` objects alive now (to leave out of
    :func:`kernel_sources` later)."""
    return {id(graph) for graph in _compiled_graphs()}


def kernel_sources(file: str, earlier: set[int]) -> list[KernelSource]:
    """The kernels of every ``CompiledFxGraph`` not in ``earlier``, with the lines of ``file``
    they came from (graphs compiled without provenance have none and are skipped)."""
    found: list[KernelSource] = []
    for graph in _compiled_graphs():
        try:
            if id(graph) not in earlier:
                found.extend(_graph_sources(graph, file))
        except Exception:
            continue
    return found


class _BreakCatcher(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sites: list[GraphBreakSite] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            return
        where = BREAK_AT.search(text)
        if where is None:
            return
        reason = text.split("Graph Break Reason:", 1)[-1].split("User code traceback:")[0]
        site = GraphBreakSite(where["file"], int(where["line"]), reason.strip()[:REASON_CHARS])
        if site not in self.sites:
            self.sites.append(site)


@contextlib.contextmanager
def catch_graph_breaks() -> Iterator[list[GraphBreakSite]]:
    """Graph breaks Dynamo logs inside the block, with their line. Only Dynamo's
    ``graph_breaks`` artifact logger is opened, to this handler alone (nothing reaches stderr
    or the user's handlers), and put back as it was after: the notebook runs this in the
    user's process."""
    catcher = _BreakCatcher()
    try:
        import torch._logging

        logger = torch._logging.getArtifactLogger("torch._dynamo.symbolic_convert", "graph_breaks")
    except Exception:
        yield catcher.sites
        return
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(catcher)
    try:
        yield catcher.sites
    finally:
        logger.removeHandler(catcher)
        logger.setLevel(level)
        logger.propagate = propagate
