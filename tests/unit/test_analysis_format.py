"""``format_duration``: the unit and precision every headline uses."""

from __future__ import annotations

import pytest

from torchscope.analysis import format_duration


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (0.0, "0.0 µs"),
        (2.7, "2.7 µs"),
        (9.96, "10 µs"),
        (23.0, "23 µs"),
        (999.4, "999 µs"),
        (999.7, "1.0 ms"),
        (2300.0, "2.3 ms"),
        (24_700.0, "24.7 ms"),
        (147_000.0, "147 ms"),
        (1_200_000.0, "1.20 s"),
        (29_900_000.0, "29.9 s"),
        (-2300.0, "-2.3 ms"),
        (float("nan"), "n/a"),
    ],
)
def test_format_duration(us: float, text: str) -> None:
    assert format_duration(us) == text
