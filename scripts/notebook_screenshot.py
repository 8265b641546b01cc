"""Render ``%torchscope``'s HTML output from a real kernel and screenshot it in headless
Chromium: ``docs/images/notebook-output.png`` (the README links it).

    .venv/bin/python scripts/notebook_screenshot.py [OUT.png]

Runs a three-cell notebook through ``nbclient`` + ``ipykernel`` (as ``tests/notebook`` does),
wraps the cell's ``text/html`` in a plain page and runs ``chromium --headless --screenshot``
(Debian's ``chromium``; ``scripts/vscode/ensure-code-server.sh`` installs it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.notebook.kernel import (  # noqa: E402
    KERNEL_NAME,
    environment,
    install_kernelspec,
    notebook,
    outputs_of,
)

CELLS = [
    "%load_ext torchscope\nimport torch",
    "def fn(x, w, b):\n    y = torch.matmul(x, w)\n    return torch.add(y, b)",
    "%torchscope --sweep N=16,64,256,1024 fn(*[torch.randn({N}, {N}) for _ in range(3)])",
]

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body{{margin:0;background:#fff;color:#1f1f1f;font-family:system-ui,sans-serif}}
.cell{{margin:16px 20px;}}
.prompt{{font-family:monospace;color:#307fc1;font-size:12px;margin-bottom:4px}}
.input{{background:#f5f5f5;border:1px solid #e0e0e0;border-radius:4px;padding:6px 10px;
font-family:ui-monospace,monospace;font-size:13px;white-space:pre;margin-bottom:10px}}
</style></head><body><div class="cell"><div class="prompt">In [3]:</div>
<div class="input">{source}</div>{html}</div></body></html>"""


def main(argv: list[str]) -> int:
    import os
    from html import escape

    from nbclient import NotebookClient

    out = Path(argv[0]) if argv else REPO / "docs" / "images" / "notebook-output.png"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium not found: apt-get install chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(environment(install_kernelspec(Path(tmp) / "jupyter")))
        nb = notebook(CELLS)
        NotebookClient(nb, timeout=600, kernel_name=KERNEL_NAME).execute()
        html = outputs_of(nb.cells[2])["text/html"]
        page = Path(tmp) / "page.html"
        page.write_text(PAGE.format(source=escape(CELLS[2]), html=html), encoding="utf-8")
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--screenshot={out}", "--window-size=1040,1330", page.as_uri()],
            check=True,
            capture_output=True,
        )
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
