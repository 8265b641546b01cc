"""What would the stable ABI's checked calls cost the native reader? One part of an abi3 build
(docs/design-notes.md, "Packages for every platform"): the limited API has no
``PyTuple_SET_ITEM``, ``PyTuple_GET_ITEM``/``_SIZE``, ``PyList_GET_ITEM``/``_SIZE``,
``PyFloat_AS_DOUBLE``, ``PyBytes_AS_STRING``/``_GET_SIZE``: the reader would call the checked
functions instead. This builds the reader a second time with those macros redefined as the
functions (forced in with ``-include``; the static types and buffers, the other parts of a
conversion, stay as they are), then times ``torchscope analyze TRACE`` with each build in
fresh processes, interleaved rounds, and prints the ratio. Its stdout must be the same.

    .venv/bin/python bench/abi3_macro_cost.py [TRACE] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts" / "vscode"))
import build_native  # noqa: E402

DEFAULT_TRACE = REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz"
CHECKED = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
#undef PyTuple_SET_ITEM
#define PyTuple_SET_ITEM(t, i, v) ((void)PyTuple_SetItem((t), (i), (v)))
#undef PyTuple_GET_ITEM
#define PyTuple_GET_ITEM(t, i) PyTuple_GetItem((t), (i))
#undef PyTuple_GET_SIZE
#define PyTuple_GET_SIZE(t) PyTuple_Size(t)
#undef PyList_GET_ITEM
#define PyList_GET_ITEM(l, i) PyList_GetItem((l), (i))
#undef PyList_GET_SIZE
#define PyList_GET_SIZE(l) PyList_Size(l)
#undef PyFloat_AS_DOUBLE
#define PyFloat_AS_DOUBLE(f) PyFloat_AsDouble(f)
#undef PyBytes_AS_STRING
#define PyBytes_AS_STRING(b) PyBytes_AsString(b)
#undef PyBytes_GET_SIZE
#define PyBytes_GET_SIZE(b) PyBytes_Size(b)
"""


def build(tree: Path, checked: bool) -> None:
    """A copy of server/ in ``tree`` with the reader built in place (checked calls or not)."""
    shutil.copytree(REPO / "server", tree, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    sources = [str(tree / Path(s).relative_to(REPO / "server")) for s in build_native.sources()]
    extra = []
    if checked:
        (tree / "checked.h").write_text(CHECKED)
        extra = ["-include", str(tree / "checked.h")]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    out = tree / "torchscope" / "ingest" / f"_native{suffix}"
    include = sysconfig.get_paths()["include"]
    cmd = ["cc", "-O3", "-DNDEBUG", "-fwrapv", "-fPIC", "-shared", f"-I{include}", *extra,
           *[s for s in sources if s.endswith(".c")], "-o", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True)


def run(tree: Path, trace: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "torchscope", "analyze", str(trace)], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"macros": Path(tmp) / "macros", "checked": Path(tmp) / "checked"}
        for name, tree in trees.items():
            build(tree, checked=name == "checked")
        times: dict[str, list[float]] = {name: [] for name in trees}
        outputs = set()
        for _ in range(args.repeat):
            for name, tree in trees.items():
                seconds, stdout = run(tree, args.trace)
                times[name].append(seconds)
                outputs.add(stdout)
    assert len(outputs) == 1, "the two builds printed different reports"
    for name, values in times.items():
        print(f"{name:8s} median {statistics.median(values):.3f} s "
              f"(min {min(values):.3f}, max {max(values):.3f}; {args.repeat} rounds)")  # fmt: skip
    ratios = [c / m for c, m in zip(times["checked"], times["macros"])]
    print(f"checked calls / macros: median {statistics.median(ratios):.3f}x "
          f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x), same report")  # fmt: skip


if __name__ == "__main__":
    main()
