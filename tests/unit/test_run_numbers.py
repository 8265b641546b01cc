"""``host/run_numbers.timing_note``: the one line that says why ``torchscope run``'s timed calls
and the program's own took other times (issue 55), for each reason it knows, on the run's own
types (``CallSeen`` per call, the timing pass's ``Measurements``)."""

from __future__ import annotations

from torchscope.host.run_numbers import differs, timing_note
from torchscope.protocol import CallSeen, Measurements

SHAPE = "[16, 1, 28, 28]"


def calls(n: int, faults: int, shapes: str = SHAPE) -> list[CallSeen]:
    return [CallSeen(us=1000.0, training=True, faults=faults, shapes=shapes) for _ in range(n)]


def measured(faults: float, fault_us: float = 2.5) -> Measurements:
    return Measurements(
        cold_us=0.0, call_us=[], dispatch_floor_us=1.0, page_faults=[faults] * 5,
        page_fault_us=fault_us,
    )  # fmt: skip


def test_within_the_noise_there_is_no_line() -> None:
    program = [26_000.0, 25_000.0, 27_000.0]
    assert not differs(28_000.0, program, 0.05)
    assert timing_note(calls(4, 0), program, 28_000.0, 0.05, None, measured(0)) == ""
    # A noisy timing widens the band: 1.5× apart with a 40 % spread is the same number.
    assert not differs(39_000.0, program, 0.40) and differs(39_000.0, program, 0.05)


def test_page_faults_of_a_fresh_heap_explain_a_faster_timed_call() -> None:
    """The program's calls took 2,400 faults each at 10 µs (24 ms); the timed ones none."""
    note = timing_note(calls(5, 2400), [26_000.0] * 4, 5_000.0, 0.05, None, measured(0, 10.0))
    assert note.startswith("timed 5.0 ms per call, 0.19× the in-run median of 26.0 ms: ")
    assert "page faults: the program's calls took 2400 per call, the timed ones 0 " in note
    assert note.endswith("the program's heap faulted its pages in (a fresh process)")


def test_a_heap_that_hands_pages_back_explains_a_slower_timed_call() -> None:
    note = timing_note(calls(5, 0), [26_000.0] * 4, 93_000.0, 0.05, None, measured(8000, 10.0))
    assert "timed 93.0 ms per call, 3.6× the in-run median of 26.0 ms" in note
    assert note.endswith("the heap hands its pages back and takes them again on every timed call")


def test_waiting_for_a_cpu_explains_a_slower_timed_call() -> None:
    note = timing_note(calls(5, 0), [26_000.0] * 4, 93_000.0, 0.05, 60_000.0, measured(0))
    assert note.endswith("waiting for a CPU: the timed calls waited 60.0 ms per call (another "
                         "process held the core)")  # fmt: skip


def test_other_shapes_come_first() -> None:
    seen = calls(4, 2400, "[64, 1, 28, 28]") + calls(1, 0, "[2, 1, 28, 28]")
    note = timing_note(seen, [26_000.0] * 3, 2_000.0, 0.05, None, measured(0, 10.0))
    assert note.endswith(
        "other shapes: 3 of the program's 3 calls had [64, 1, 28, 28], the timed call "
        "[2, 1, 28, 28] (another batch size)"
    )


def test_otherwise_it_says_it_does_not_know() -> None:
    note = timing_note(calls(5, 0), [26_000.0] * 4, 93_000.0, 0.05, 1_000.0, measured(0))
    assert note.startswith("timed 93.0 ms per call, 3.6× the in-run median of 26.0 ms: ")
    assert "torchscope does not know why" in note
