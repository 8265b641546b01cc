"""Open a secret link in the browser without putting the secret on any command line.

A browser is started with its URL in ``argv``, which every local user can read (``ps``). So
the link — whose path holds the trace server's token — goes into an HTML file only the user
can read (0600, in a 0700 folder), and the browser is given that file's path. The page sends
the browser on to the link and the file is deleted once the trace was fetched or the wait ended.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import shutil
import tempfile
from pathlib import Path


def write_redirect(link: str) -> Path:
    """A private HTML file that redirects to ``link``; the caller deletes it (``remove``)."""
    folder = Path(tempfile.mkdtemp(prefix="torchscope-open-"))  # 0700
    page = folder / "open-trace.html"
    descriptor = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    quoted = html.escape(link, quote=True)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(
            "<!doctype html><meta charset=utf-8><title>torchscope: opening Perfetto</title>"
            f'<meta http-equiv="refresh" content="0;url={quoted}">'
            f"<script>location.replace({json.dumps(link)})</script>"
            f'<a href="{quoted}">Open the trace in Perfetto</a>'
        )
    return page


def remove(page: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(page.parent)
