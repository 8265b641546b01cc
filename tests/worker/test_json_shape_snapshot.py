"""The shape of ``torchscope profile --json`` (field names and value types, recursively) on the
bundled examples matches its snapshot: refactors of the result model keep the output contract.

Numbers differ from run to run, so this compares the *shape*: every key path with the JSON
types seen there (``lines[].ops[].calls: number``). Snapshots live in ``tests/data/snapshots``;
``python tests/worker/test_json_shape_snapshot.py --update`` rewrites them after an intended
change to the contract (then review the diff).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = REPO / "tests" / "data" / "snapshots"

CASES = {
    "profile_matmul_add": [
        "examples/matmul_add.py::fn",
        "--call",
        "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))",
    ],
    "profile_lines_with_stack": ["examples/lines.py::calls_helper", "--with-stack"],
    "profile_memory": [
        "tests/fixtures/workspace/memory_samples.py::two_temporaries",
        "--call",
        "two_temporaries(torch.randn(512, 1024))",
        "--memory",
    ],
    "sweep_matmul_add": [
        "examples/matmul_add.py::fn",
        "--call",
        "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}, {N}))",
        "--sweep",
        "N=8,16",
    ],
}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def shape(value: Any, path: str = "", out: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """Key path → JSON types seen there. Dicts keyed by data (``copy_bytes``, ``rules_skipped``)
    are folded into ``{*}`` so a different set of rules or copy kinds is not a new shape."""
    out = {} if out is None else out
    out.setdefault(path or ".", set()).add(_kind(value))
    if isinstance(value, dict):
        folded = path.rsplit(".", 1)[-1] in {"copy_bytes", "rules_skipped", "details", "graph_code"}
        for key, item in value.items():
            shape(item, f"{path}.{'{*}' if folded else key}", out)
    elif isinstance(value, list):
        for item in value:
            shape(item, f"{path}[]", out)
    return out


def profile_json(args: list[str], tmp: Path) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", "profile", *args, "--json", "-q", "--steps", "2",
         "--warmup", "1", "--trace-dir", str(tmp)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def merged_shape(args: list[str], tmp: Path) -> dict[str, list[str]]:
    return {k: sorted(v) for k, v in sorted(shape(profile_json(args, tmp)).items())}


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_shape_is_unchanged(case: str, tmp_path: Path) -> None:
    expected = json.loads((SNAPSHOTS / f"{case}.shape.json").read_text(encoding="utf-8"))
    actual = merged_shape(CASES[case], tmp_path)
    # Optional parts (a finding's details, a rule that may or may not fire) vary per run:
    # compare the paths that are always present, and require no path outside the snapshot.
    assert set(actual) <= set(expected), sorted(set(actual) - set(expected))
    # A note (``notes[]``) is there only when a run has something to say (issue 55: costs that
    # are per profiled step), like a finding.
    optional = (".findings", ".rules_skipped", ".notes[]")
    required = {k for k in expected if not k.startswith(optional)}
    assert required <= set(actual), sorted(required - set(actual))
    for key in required:
        assert set(actual[key]) <= set(expected[key]), (key, actual[key], expected[key])


if __name__ == "__main__":  # python tests/worker/test_json_shape_snapshot.py --update
    import tempfile

    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: test_json_shape_snapshot.py --update")
    for name, case_args in CASES.items():
        with tempfile.TemporaryDirectory() as tmp:
            seen = merged_shape(case_args, Path(tmp))
            for _ in range(2):  # union of a few runs: optional fields that appear sometimes
                for k, v in merged_shape(case_args, Path(tmp)).items():
                    seen[k] = sorted(set(seen.get(k, [])) | set(v))
        text = json.dumps(seen, indent=1, sort_keys=True) + "\n"
        (SNAPSHOTS / f"{name}.shape.json").write_text(text, encoding="utf-8")
        print("wrote", name)
