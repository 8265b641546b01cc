"""``%torchscope`` in a real notebook through a real Jupyter kernel (``nbclient`` +
``ipykernel``): a cell defines the function, other cells profile it; everything is checked
from the executed notebook's outputs."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from tests.notebook.kernel import KERNEL_NAME, install_kernelspec, notebook, outputs_of

pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

MIME_JSON = "application/vnd.torchscope.report+json"

SETUP = "%load_ext torchscope\nimport torch"
DEFINE = "def fn(x, w, b):\n    y = torch.matmul(x, w)\n    return torch.add(y, b)"
TENSORS = (
    "small = [torch.randn(8, 8) for _ in range(3)]\n"
    "big = [torch.randn(1024, 1024) for _ in range(3)]"
)
CELL_MAGIC = (
    "%%torchscope --steps 3\n"
    "def scaled(x):\n"
    "    y = x * 2\n"
    "    return torch.matmul(y, y).sum()\n"
    "scaled(big[0])"
)
CHECK = "print('profiler on:', torch.autograd._profiler_enabled())"
#: Writes a line of the profiler's chatter to fd 2, as torch's C++ side does.
CHATTY = (
    "import os\n"
    "def chatty(x):\n"
    "    os.write(2, b'USDT:2026-01-01 00:00:00 1:1 SyncActivityProfilerHandler.cpp:52] "
    "profiler_start\\n')\n"
    "    return x * 2"
)

#: 3 ms slower whenever the profiler is off: the passes disagree however often they are rerun.
SHY = (
    "import time\n"
    "def shy(x):\n"
    "    if not torch.autograd._profiler_enabled():\n"
    "        time.sleep(0.003)\n"
    "    return x * 2"
)

#: The CLI's ``profile --json`` keys (``ProfileOutcome.to_json`` over ``Report.to_dict``).
CLI_KEYS = {
    "target",
    "call",
    "device",
    "verdict",
    "timing",
    "profiler_overhead_us",
    "findings",
    "top_ops",
    "steps",
    "devices",
    "top_kernels",
    "kernels_recorded",
    "step_source",
    "notes",
    "rules_skipped",
    "callees",
    "lines",
    "peaks",
    "trace_path",
    "dispatch_floor_us",
    "torch_version",
    "attribution_note",
}


def run_notebook(
    cells: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    while_alive: Optional[Callable[[Any, Any], None]] = None,
    first: Optional[int] = None,
) -> Any:
    """Execute ``cells`` (the ``first`` ones only, if given) in a fresh kernel;
    ``while_alive(client, nb)`` runs after them, before the kernel shuts down."""
    from nbclient import NotebookClient

    for name, value in install_kernelspec(tmp_path / "jupyter").items():
        monkeypatch.setenv(name, value)
    nb = notebook(cells)
    client = NotebookClient(
        nb, timeout=300, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells[:first]):
            client.execute_cell(cell, index)
        if while_alive is not None:
            while_alive(client, nb)
    return nb


def fetch_perfetto_trace(html: str) -> tuple[str, int]:
    """The trace URL in the HTML's Perfetto link, and how many bytes a GET of it returned."""
    link = re.search(r'href="[^"]*#!/\?url=([^"]+)"', html)
    assert link is not None, html[-800:]
    url = link.group(1)
    with urllib.request.urlopen(url, timeout=10) as response:
        return url, len(response.read()) if response.status == 200 else -1


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("nb")
    fetched: dict[str, Any] = {}

    def fetch(client: Any, nb: Any) -> None:
        # One trace is served at a time: the last displayed report's (cell 8's).
        fetched["url"], fetched["bytes"] = fetch_perfetto_trace(
            outputs_of(nb.cells[8])["text/html"]
        )

    with pytest.MonkeyPatch.context() as mp:
        nb = run_notebook(
            [
                SETUP,
                DEFINE,
                TENSORS,
                "%torchscope fn(*small)",
                "%torchscope fn(*big)",
                CELL_MAGIC,
                CHECK,
                SHY,
                "%torchscope --timing-budget 0.3 --steps 2 shy(small[0])",
            ],
            tmp,
            mp,
            fetch,
        )
    return [*(outputs_of(cell) for cell in nb.cells), fetched]


def test_small_call_is_overhead_bound_and_big_is_compute_bound(
    executed: list[dict[str, Any]],
) -> None:
    small, big = executed[3][MIME_JSON], executed[4][MIME_JSON]
    assert small["verdict"]["id"] == "overhead-bound", small["verdict"]["headline"]
    assert big["verdict"]["id"] == "compute-bound", big["verdict"]["headline"]
    assert small["in_process"] is True


def test_html_names_the_hot_line_of_the_cell(executed: list[dict[str, Any]]) -> None:
    html = executed[4]["text/html"]
    report = executed[4][MIME_JSON]
    hot = max(report["lines"], key=lambda line: line["share"])
    assert hot["line"] == 2  # `y = torch.matmul(x, w)`, line 2 of the cell that defines fn
    assert "Cell In[2], line 1" in html  # the def's cell (execution count 2)
    row = re.search(r'<tr class="hot">(.*?)</tr>', html, re.S)
    assert row is not None and "torch.matmul(x, w)" in row.group(1)
    assert "in-process" in html.lower() or "in this process" in html.lower()
    assert "<script" not in html.lower()
    assert "not isolated" in executed[4]["text/plain"] or "not in an isolated" in html


def test_json_bundle_matches_the_cli_report(executed: list[dict[str, Any]]) -> None:
    report = executed[4][MIME_JSON]
    assert set(report) >= CLI_KEYS, CLI_KEYS - set(report)
    assert report["target"]["qualname"] == "fn"
    assert report["call"] == "fn(*big)"
    assert json.loads(json.dumps(report)) == report
    assert report["lines"] and all({"line", "share", "cpu_us"} <= set(x) for x in report["lines"])


def test_cell_magic_profiles_a_function_defined_in_its_own_cell(
    executed: list[dict[str, Any]],
) -> None:
    report = executed[5][MIME_JSON]
    assert report["target"]["qualname"] == "scaled"
    lines = {x["line"] for x in report["lines"]}
    assert lines <= {3, 4} and 4 in lines  # the cell's own lines (line 1 is %%torchscope)
    assert len(report["steps"]) == 3
    assert "profiler on: False" in executed[6]["stdout"]


def test_an_unstable_verdict_says_so_in_every_output(executed: list[dict[str, Any]]) -> None:
    report = executed[8][MIME_JSON]
    reason = report["verdict"]["unstable_reason"]
    assert report["verdict"]["stable"] is False and reason.startswith("unstable: ")
    assert reason in executed[8]["text/plain"]
    assert reason.replace("'", "&#x27;") in executed[8]["text/html"]
    assert report["profiler_overhead_us"] is None


def test_perfetto_link_serves_the_trace(executed: list[dict[str, Any]]) -> None:
    fetched = executed[-1]
    assert re.match(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{20,}/", fetched["url"])
    assert fetched["bytes"] > 1000  # the gzipped trace, served by the kernel


def test_the_profilers_chatter_stays_out_of_the_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's USDT lines and the one ``chatty`` writes to fd 2 (as the C++ side writes them)
    are under no cell; with ``--verbose`` they are (the job's log). The kernel forwards fd 2
    from a thread, so a line can land under the next cell: a pause follows each profile.
    (ipykernel forwards fd 2 only outside pytest: it looks for ``PYTEST_CURRENT_TEST``.)"""
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    profile = "%torchscope --timing-budget 0.3 --steps 2 --warmup 1"
    pause = "import time\ntime.sleep(1)"
    cells = [SETUP, CHATTY, f"{profile} chatty(torch.ones(4))", pause]
    cells += [f"{profile} -v chatty(torch.ones(4))", pause]
    shown = [outputs_of(cell) for cell in run_notebook(cells, tmp_path, monkeypatch).cells]
    quiet = "".join(cell["stderr"] + cell["stdout"] for cell in shown[:4])
    assert "USDT:" not in quiet, quiet
    assert "error" not in shown[2] and shown[2]["text/plain"]  # the profile itself was shown
    loud = "".join(cell["stderr"] for cell in shown[4:])
    assert "SyncActivityProfilerHandler.cpp:52] profiler_start" in loud, shown[4:]
