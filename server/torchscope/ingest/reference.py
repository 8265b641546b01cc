"""The reference reader: stdlib ``json`` with :meth:`~.sink.EventSink.accept` as its
``object_hook``, so each event is placed the moment the parser has built it. Pure Python
(the ``json`` module's C speed-ups where the interpreter has them): every install has it.
It reads what the fast reader hands back, every install without the C part, and words
every parse error."""

from __future__ import annotations

from typing import Any

from .sink import EventSink
from .source import Document, empty_archive, events_of, parse_json
from .text import clean_object, has_surrogate


def scan(name: str, document: Document, sink: EventSink) -> tuple[dict[str, Any], int]:
    """Fill ``sink`` from the whole of ``document``: its metadata and the count of array
    entries that were not events. Raises :class:`~.errors.TraceError` for what is not a
    trace."""
    data = document.json_text()
    if not data:
        raise empty_archive(name)
    accept = sink.accept
    if has_surrogate(data):  # rare: clean each object before the sink sees it

        def accept(obj: dict[str, Any]) -> Any:
            return sink.accept(clean_object(obj))

    meta, events = events_of(name, parse_json(name, data, accept))
    del data
    not_events = len(events) - events.count(None)
    if sink.non_finite is not None:  # kept in the list by the sink: its index names it
        noted = sink.non_finite[0]
        sink.non_finite_at = next((i for i, e in enumerate(events) if e is noted), None)
        not_events -= sink.non_finite_at is not None
    return meta, not_events
