"""What ``torchscope.profile`` returns: the report, and its rich display in a notebook.

``ProfileReport`` holds the same ``ProfileOutcome`` the CLI prints (``to_json`` is the
``profile --json`` object, plus ``"in_process": true``; a sweep or a comparison adds its key as
the CLI does). Displayed, it is a mime bundle of ``text/html`` (``report/html.py``),
``text/plain`` (the CLI's text report) and ``application/vnd.torchscope.report+json``.

The HTML's Perfetto link is the CLI's ``--open``: the trace is served once from
``http://127.0.0.1:9001/<token>/<name>`` (``host/trace_server.py``) with the same origin and
token rules, in a background thread that stops after the fetch or the timeout. One report is
served at a time: displaying another closes the previous server.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torchscope.notebook.cells import location, source_lines
from torchscope.protocol import PERFETTO_ORIGIN, PERFETTO_PORT, PERFETTO_TIMEOUT_S, to_builtins

if TYPE_CHECKING:
    from torchscope.analysis.results import Report, Verdict
    from torchscope.host.profile_run import ProfileOutcome
    from torchscope.host.trace_server import TraceServer

MIME_JSON = "application/vnd.torchscope.report+json"

IN_PROCESS_NOTE = (
    "Profiled in this process (the notebook's kernel), not in an isolated worker: the kernel's "
    "state is the input, and a crash or a hang here is the kernel's."
)

#: Where the findings' ``docs/findings.md#rule`` links resolve: the docs next to the package
#: (an editable install or a checkout), else left relative.
_DOCS_ROOT = Path(__file__).resolve().parents[3]

_serving_lock = threading.Lock()
_serving: Optional[TraceServer] = None


def _docs_base() -> str:
    return _DOCS_ROOT.as_uri() + "/" if (_DOCS_ROOT / "docs" / "findings.md").is_file() else ""


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where the HTML is shown and a link can be clicked)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None) if ipython is not None else None
    shell = get() if get is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def serve_trace(trace: Path, timeout_s: float = PERFETTO_TIMEOUT_S) -> tuple[Optional[str], str]:
    """Serve ``trace`` once for the Perfetto UI in the background: (the link, a note), or
    (None, why not). The port and origin follow the CLI's ``--open`` (and its variables)."""
    from torchscope.host.trace_server import TraceServer, TraceServerError
    from torchscope.protocol import PERFETTO_ORIGIN_ENV as ORIGIN_ENV
    from torchscope.protocol import PERFETTO_PORT_ENV as PORT_ENV

    global _serving
    port = int(os.environ.get(PORT_ENV) or PERFETTO_PORT)
    origin = os.environ.get(ORIGIN_ENV) or PERFETTO_ORIGIN
    with _serving_lock:
        if _serving is not None:
            _serving.close()
            _serving = None
        try:
            server = TraceServer(trace, origin=origin, port=port).start()
        except TraceServerError as exc:
            return None, str(exc)
        _serving = server
    threading.Thread(
        target=server.wait, args=(timeout_s,), name="torchscope-perfetto", daemon=True
    ).start()
    note = (
        f"(served once from 127.0.0.1:{server.port} for {timeout_s:g} s; "
        "report.open() serves it again)"
    )
    return server.link, note


def stop_serving() -> None:
    global _serving
    with _serving_lock:
        if _serving is not None:
            _serving.close()
            _serving = None


@dataclass
class Extra:
    """What a sweep or a comparison adds: its JSON key and object, its text, its chart."""

    key: str
    data: dict[str, Any]
    title: str
    text: str
    chart_svg: str = ""


@dataclass
class ProfileReport:
    """One in-process profile: ``.verdict.id``, ``.to_json()``, and a rich display."""

    outcome: ProfileOutcome
    function: Any = None
    extra: Optional[Extra] = None
    serve: Optional[bool] = None
    """Serve the trace for the HTML's Perfetto link when displayed (None: inside a kernel)."""
    _link: Optional[tuple[Optional[str], str]] = field(default=None, repr=False)

    @property
    def report(self) -> Report:
        """The analysis' report (``analysis.results.Report``)."""
        return self.outcome.report

    @property
    def verdict(self) -> Verdict:
        return self.outcome.report.verdict

    @property
    def trace_path(self) -> str:
        return self.outcome.result.trace_path

    def to_json(self) -> dict[str, Any]:
        """The ``profile --json`` object, plus ``in_process: true`` (and a sweep's or a
        comparison's key)."""
        data: dict[str, Any] = to_builtins(self.outcome)
        data["in_process"] = True
        if self.extra is not None:
            data[self.extra.key] = self.extra.data
        return data

    def text(self) -> str:
        """The CLI's text report (``torchscope profile``), with the in-process note."""
        from torchscope.report.lines import source_with_margin
        from torchscope.report.outcome_text import render_text

        target = self.outcome.target
        source = "\n".join(code for _, code in self._source_by_number())
        listing = source_with_margin(source, target.first_line, target.end_line, self.report)
        text = render_text(self.outcome, listing)
        if self.extra is not None:
            text += "\n" + self.extra.text + "\n"
        return f"{text}note: {IN_PROCESS_NOTE}\n"

    def _source_by_number(self) -> list[tuple[int, str]]:
        """Lines 1..end of the function's file or cell ("" above the function)."""
        lines = source_lines(self.function) if self.function is not None else []
        first = lines[0][0] if lines else 1
        return [(n, "") for n in range(1, first)] + lines

    def open(self, timeout_s: float = PERFETTO_TIMEOUT_S) -> Optional[str]:
        """Serve the trace for the Perfetto UI again; returns the link (None: see the note)."""
        self._link = serve_trace(Path(self.trace_path), timeout_s)
        return self._link[0]

    def html(self) -> str:
        from torchscope.report.html import HtmlView, render_html

        target = self.outcome.target
        if self._link is None and (self.serve if self.serve is not None else in_kernel()):
            self._link = serve_trace(Path(self.trace_path))
        link, message = self._link or (None, "report.open() serves the trace for Perfetto")
        view = HtmlView(
            title=target.qualname,
            location=location(target.file, target.def_line),
            call=self.outcome.call or f"{target.qualname}()",
            source=source_lines(self.function) if self.function is not None else [],
            note=IN_PROCESS_NOTE,
            perfetto_link=link,
            perfetto_message=message,
            trace_path=self.trace_path,
            docs_base=_docs_base(),
        )
        if self.extra is not None:
            view.chart_svg = self.extra.chart_svg
            view.extra_title, view.extra_text = self.extra.title, self.extra.text
        return render_html(self.report, view)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {
            "text/plain": self.text(),
            "text/html": self.html(),
            MIME_JSON: self.to_json(),
        }

    def __repr__(self) -> str:
        target = self.outcome.target
        return f"<torchscope report {target.qualname}: {self.verdict.id}>"

    def __str__(self) -> str:
        return self.text()
