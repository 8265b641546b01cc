"""Where captured inputs live (``torchscope run --capture``) and how a profile finds them.

A capture of ``FILE::QUALNAME`` is ``.torchscope/inputs/<module path>/<qualname>.pt`` under the
workspace (the current directory on the CLI): ``<module path>`` is the file's path relative to
the workspace without ``.py`` (``examples/real_inputs/train``), or, for a file outside it, the
file's absolute path without its leading ``/``. The worker writes and reads the file
(``worker/captures.py``); the host only names it, so this module never imports torch.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from pathlib import Path
from typing import Optional

from torchscope.files import write_atomic
from torchscope.protocol import Inputs

INPUTS_DIR = Path(".torchscope") / "inputs"


def capture_path(workspace: Optional[str], file: str, qualname: str) -> Path:
    root = Path(workspace or Path.cwd()).resolve()
    source = Path(file).resolve()
    try:
        module_path = source.relative_to(root).with_suffix("")
    except ValueError:
        module_path = Path(*source.with_suffix("").parts[1:])
    return root / INPUTS_DIR / module_path / f"{qualname}.pt"


def origin_path(capture: Path) -> Path:
    """The note beside a capture naming the program that made it (``<qualname>.origin.json``)."""
    return capture.with_suffix(".origin.json")


def write_origin(capture: Path, entry: str, program: str) -> None:
    """Note which program made ``capture``: ``entry`` its command line, ``program`` its short
    name (``train.py``) for the editor's **Profile with captured inputs (train.py, …)**."""
    with contextlib.suppress(OSError):  # else only the label loses the program's name
        note = json.dumps({"entry": entry, "program": program}) + "\n"
        write_atomic(origin_path(capture), note.encode())  # 0600, as the capture


def capture_origin(capture: Path) -> Optional[str]:
    """The short name of the program that made ``capture``, None when unknown."""
    try:
        program = json.loads(origin_path(capture).read_text()).get("program")
    except (OSError, ValueError, AttributeError):
        return None
    return program if isinstance(program, str) and program else None


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def find_capture(workspace: Optional[str], file: str, qualname: str) -> Optional[Inputs]:
    """The ``inputs`` object of a replay (``source: capture``), or None without a capture."""
    path = capture_path(workspace, file, qualname)
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    return Inputs("capture", str(path), _iso(stamp))
