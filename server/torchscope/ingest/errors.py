"""The one error type the analysis raises for input it cannot read.

Callers (CLI, LSP, worker) catch exactly this and show its message as is, so each message
names the file, says what is wrong and what to do about it.
"""

from __future__ import annotations


class TraceError(Exception):
    """The trace file is missing, unreadable, truncated, empty or not a Kineto trace."""
