"""One intra-op thread, for a while: the timing pass's thread-contention check.

PyTorch's parallel CPU ops split their work over ``torch.get_num_threads()`` threads and wait
for the slowest; on a machine shared with other processes one of them may be descheduled, and a
60 µs op takes milliseconds. Timing a batch at one thread right after each normal sample shows
whether that happens to this function (the ``thread-contention`` finding).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def intra_op_threads() -> int:
    import torch

    return int(torch.get_num_threads())


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """``torch.set_num_threads(1)`` inside, the previous count restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
