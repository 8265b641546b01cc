"""Shared paths for all test suites."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "workspace"
EXAMPLES = REPO / "examples"
SHARED_TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    return folder
